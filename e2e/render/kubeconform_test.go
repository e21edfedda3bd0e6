package render_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/yannh/kubeconform/pkg/resource"
	"github.com/yannh/kubeconform/pkg/validator"
	"sigs.k8s.io/yaml"

	"slipway.dev/slipway/internal/devcluster"
	"slipway.dev/slipway/internal/devcluster/devtest"
	"slipway.dev/slipway/internal/kube"
	"slipway.dev/slipway/internal/render"
	"slipway.dev/slipway/internal/render/rendertest"
	"slipway.dev/slipway/internal/spec"
)

// serviceMonitorDefinition is the ServiceMonitor's name in the OpenAPI v2 document.
const serviceMonitorDefinition = `"com.coreos.monitoring.v1.ServiceMonitor"`

// strictValidator is kubeconform in strict mode (unknown fields and duplicate keys refused)
// over schemas generated from the dev API server's OpenAPI v2 document, the ServiceMonitor
// CRD installed. A kind without a schema is an error, not a skip.
func strictValidator(t *testing.T, env *devcluster.Env) validator.Validator {
	t.Helper()
	devtest.ServiceMonitorCRD(t, env)
	c, _ := client(t, env.Kubeconfig)
	var doc []byte
	// The API server publishes a new CRD's schema in its OpenAPI document a moment after it
	// serves the kind.
	devtest.WaitFor(t, time.Minute, "the ServiceMonitor in /openapi/v2", func() (bool, string) {
		var err error
		doc, err = openAPIV2(c)
		if err != nil {
			return false, err.Error()
		}
		return bytes.Contains(doc, []byte(serviceMonitorDefinition)), "no " + serviceMonitorDefinition
	})
	dir := t.TempDir()
	n, err := writeSchemas(doc, dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d schemas from the dev API server's /openapi/v2", n)
	v, err := validator.New([]string{schemaLocation(dir)}, validator.Opts{Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func openAPIV2(c *kube.Client) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return c.Clientset.Discovery().RESTClient().Get().AbsPath("/openapi/v2").SetHeader("Accept", "application/json").DoRaw(ctx)
}

// conform validates a stream of YAML documents and reports every object that is not valid;
// it returns the kinds of those that were, and how many of each.
func conform(t *testing.T, v validator.Validator, name string, stream []byte) map[string]int {
	t.Helper()
	valid := map[string]int{}
	for _, r := range v.Validate(name, io.NopCloser(bytes.NewReader(stream))) {
		switch r.Status {
		case validator.Valid:
			sig, _ := r.Resource.Signature()
			valid[sig.Kind]++
		case validator.Empty:
		default:
			t.Errorf("%s: %s", name, describe(r))
		}
	}
	return valid
}

// describe names a result's object and says what kubeconform found: each field it refused as
// "path: message". The result's ValidationErrors stop at the first schema reference ("/spec:
// validation failed"); the error's text goes down to the fields.
func describe(r validator.Result) string {
	what := "an object"
	if sig, err := r.Resource.Signature(); err == nil {
		what = sig.Kind + " " + sig.Name
	}
	if r.Err == nil {
		return what + ": status " + fmt.Sprint(r.Status)
	}
	var fields []string
	for _, at := range strings.Split(r.Err.Error(), " - at '")[1:] {
		path, msg, _ := strings.Cut(at, "': ")
		fields = append(fields, path+": "+strings.TrimSpace(msg))
	}
	if len(fields) == 0 {
		return what + ": " + r.Err.Error()
	}
	return what + ": " + strings.Join(fields, "; ")
}

// TestKubeconformExamples runs kubeconform -strict, as CI of the reference's kustomize package
// does, over what slipway renders: the package `slipway render --out` writes for every example,
// built by `kubectl kustomize` as `kubectl apply -k` builds it, and every golden render file
// (one per feature of SPEC §3a). TestDryRunExamples holds the same objects to the API server's
// strict dry run; this is the offline check a GitOps pipeline can run before any cluster.
func TestKubeconformExamples(t *testing.T) {
	t.Setenv("APP_TOKEN", "kubeconform-token") // examples/full's secrets
	t.Setenv("SSO_CLIENT_SECRET", "kubeconform-client-secret")
	env := devtest.Env(t)
	gateway := env.Gateway
	if gateway == "" { // a core-only dev cluster: render routes onto a Gateway all the same
		gateway = "slipway-dev/public"
	}
	t.Setenv(spec.EnvGateway, gateway) // examples/publish's www goes behind it: its HTTPRoute
	// examples/publish names a DNS key, whose secret the loader wants; render sends no update.
	t.Setenv(spec.EnvTSIGSecret, "a3ViZWNvbmZvcm0tdGVzdC1rZXk=")
	t.Setenv(spec.EnvTSIGSecretFile, "")
	v := strictValidator(t, env)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	tmp := t.TempDir()
	base, _ := filepath.Abs("../../examples/full/base/slipway.yaml")
	slipway := buildSlipway(t, ctx, tmp)
	slipway.run(t, "-f", base, "--registry", env.Registry, "images", "push")

	validated := map[string]int{}
	examples, err := filepath.Glob("../../examples/*/slipway.yaml")
	if err != nil || len(examples) < 3 {
		t.Fatalf("examples: %v %v", examples, err)
	}
	for _, file := range examples {
		example := filepath.Base(filepath.Dir(file))
		t.Run("examples/"+example, func(t *testing.T) {
			abs, _ := filepath.Abs(file)
			dir := filepath.Join(tmp, example)
			slipway.run(t, "-f", abs, "-n", "kubeconform-"+example, "--registry", env.Registry, "--kubeconfig", env.Kubeconfig,
				"--state", "file://"+filepath.Join(tmp, example+".json"), "render", "--push", "--service-monitors", "--out", dir)
			out, err := exec.CommandContext(ctx, env.Kubectl(), "kustomize", dir).Output()
			if err != nil {
				t.Fatalf("kubectl kustomize %s: %v", dir, err)
			}
			kinds := conform(t, v, example, out)
			t.Logf("valid: %v", kinds)
			maps.Copy(validated, kinds)
		})
	}
	// The kinds of the CRDs were checked against their schemas too, not only the built-in ones.
	for _, kind := range []string{"HTTPRoute", "ServiceMonitor", "Deployment", "PodDisruptionBudget"} {
		if validated[kind] == 0 {
			t.Errorf("no %s among the examples' valid objects %v", kind, validated)
		}
	}
	goldens, _ := filepath.Glob("../../internal/render/testdata/*.golden.yaml")
	more, _ := filepath.Glob("../../internal/render/testdata/*/*.golden.yaml")
	for _, file := range append(goldens, more...) {
		if strings.HasSuffix(file, ".kustomization.golden.yaml") {
			continue // kustomize's own file, not an object for the cluster
		}
		t.Run(file, func(t *testing.T) {
			b, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			if len(conform(t, v, file, b)) == 0 {
				t.Errorf("%s: no object validated", file)
			}
		})
	}
}

// TestKubeconformRefusesWrongFields: the generated schemas are strict. examples/full as
// rendered passes; the same objects with one unknown field, or a value of the wrong type,
// in a built-in kind or a CRD's, are each refused with the path of the field.
func TestKubeconformRefusesWrongFields(t *testing.T) {
	t.Setenv("APP_TOKEN", "kubeconform-token")
	t.Setenv("SSO_CLIENT_SECRET", "kubeconform-client-secret")
	v := strictValidator(t, devtest.Env(t))
	g, err := spec.Load("../../examples/full/slipway.yaml")
	if err != nil {
		t.Fatal(err)
	}
	in := rendertest.Input(g)
	in.ServiceMonitors = true
	objs, err := render.Objects(in)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, kind, object string
		change             func(m map[string]any)
		want               string // path: message of kubeconform's one error; empty: valid
	}{
		{"as rendered", "Deployment", "web", func(map[string]any) {}, ""},
		{"unknown container field", "Deployment", "web", func(m map[string]any) {
			container(m)["imagePullPolicyy"] = "Always"
		}, "/spec/template/spec/containers/0: additional properties 'imagePullPolicyy' not allowed"},
		{"unknown metadata field", "Service", "web", func(m map[string]any) {
			m["metadata"].(map[string]any)["label"] = map[string]any{"a": "b"}
		}, "/metadata: additional properties 'label' not allowed"},
		{"wrong type", "Deployment", "web-worker", func(m map[string]any) {
			m["spec"].(map[string]any)["replicas"] = "two"
		}, "/spec/replicas: got string, want integer"},
		{"unknown field of a CRD's kind", "ServiceMonitor", "web-worker-metrics", func(m map[string]any) {
			m["spec"].(map[string]any)["endpoints"].([]any)[0].(map[string]any)["portName"] = "tcp-9101"
		}, "/spec/endpoints/0: additional properties 'portName' not allowed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := objectOf(t, objs, tt.kind, tt.object)
			tt.change(m)
			b, err := yaml.Marshal(m)
			if err != nil {
				t.Fatal(err)
			}
			r := v.ValidateResource(resource.Resource{Path: tt.name, Bytes: b})
			got := ""
			if r.Status != validator.Valid {
				got = describe(r)
				got = strings.TrimPrefix(got, tt.kind+" "+tt.object+": ")
			}
			if got != tt.want {
				t.Errorf("kubeconform -strict of %s %s:\n got %q\nwant %q", tt.kind, tt.object, got, tt.want)
			}
		})
	}
}

// objectOf is the rendered object kind/name as a map, as it goes into a package.
func objectOf(t *testing.T, objs []render.Object, kind, name string) map[string]any {
	t.Helper()
	for _, o := range objs {
		if o.GetObjectKind().GroupVersionKind().Kind != kind || o.GetName() != name {
			continue
		}
		b, err := render.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := yaml.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	t.Fatalf("examples/full renders no %s %s", kind, name)
	return nil
}

func container(m map[string]any) map[string]any {
	tmpl := m["spec"].(map[string]any)["template"].(map[string]any)
	return tmpl["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)
}
