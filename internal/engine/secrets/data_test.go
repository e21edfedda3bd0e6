package secrets

import (
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"slipway.dev/slipway/internal/kube"
	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/render"
	"slipway.dev/slipway/internal/spec"
)

const configGroup = `group: demo
nodes:
  web:
    image: {rootfs: .}
    env:
      DB: {secret: db, key: password}
      LEVEL: {config: settings, key: level}
      TOKEN: {secret: app, key: token}
    files:
      - {path: /etc/tls, secret: web-tls}
      - {path: /etc/app, config: app}
    config:
      app: {files: {app.conf: app.conf}}
    secrets:
      app: {fromEnv: {token: SLIPWAY_ENGINE_TEST_TOKEN}}
`

// testSecretKey is the group's secret key the test plans are made with.
var testSecretKey = []byte("engine-test-key-of-32-bytes-long")

func configPlan(t *testing.T) (*spec.Group, *plan.Plan) { return desiredPlan(t, configGroup) }

// desiredPlan parses group (files under testdata/config) and renders its objects into a plan's
// Desired, as Plan would hand them to apply.
func desiredPlan(t *testing.T, group string) (*spec.Group, *plan.Plan) {
	t.Helper()
	dir, _ := filepath.Abs("testdata/config")
	g, err := spec.Parse(filepath.Join(dir, "slipway.yaml"), []byte(group), dir)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := render.Objects(render.Input{Group: g, Namespace: "demo", SecretKey: testSecretKey,
		Images: map[string]string{"web": "r/web@sha256:" + strings.Repeat("0", 64)}, MachineIDs: map[string]string{"web": "0123"}})
	if err != nil {
		t.Fatal(err)
	}
	p := &plan.Plan{Group: "demo", Namespace: "demo", SecretKey: testSecretKey}
	for _, o := range objs {
		u, err := kube.ToUnstructured(o)
		if err != nil {
			t.Fatal(err)
		}
		p.Desired = append(p.Desired, u)
	}
	return g, p
}

func secretOf(p *plan.Plan) *unstructured.Unstructured {
	for _, d := range p.Desired {
		if d.GetKind() == "Secret" {
			return d
		}
	}
	return nil
}

// TestWithSecretData: apply fills the Secret's values from the environment, leaving the plan
// without them, and refuses values that changed since the plan or are gone, naming the
// variable and never the value.
func TestWithSecretData(t *testing.T) {
	t.Setenv("SLIPWAY_ENGINE_TEST_TOKEN", "first-value")
	g, p := configPlan(t)
	if _, ok := secretOf(p).Object["data"]; ok {
		t.Fatal("the rendered Secret has data")
	}
	filled, err := WithData(p, g)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"token": base64.StdEncoding.EncodeToString([]byte("first-value"))}
	if diff := cmp.Diff(want, secretOf(filled).Object["data"]); diff != "" {
		t.Errorf("filled data (-want +got):\n%s", diff)
	}
	if _, ok := secretOf(p).Object["data"]; ok {
		t.Error("withSecretData changed the plan's own Secret")
	}

	// A plan checked with another key than it was made with is refused, as changed values.
	other := *p
	other.SecretKey = []byte("another-key-of-thirty-two-bytes!")
	if _, err := WithData(&other, g); err == nil {
		t.Error("values checked with another key than the plan's were accepted")
	}
	other.SecretKey = nil
	if _, err := WithData(&other, g); err == nil || !strings.Contains(err.Error(), "no secret key") {
		t.Errorf("a plan without a key: error %v, want one saying so", err)
	}

	t.Setenv("SLIPWAY_ENGINE_TEST_TOKEN", "second-value")
	_, err = WithData(p, g)
	if got, want := errString(err), "node web: secret app: its values changed since the plan was made: plan again"; got != want {
		t.Errorf("changed value: error %q, want %q", got, want)
	}

	t.Setenv("SLIPWAY_ENGINE_TEST_TOKEN", "")
	os.Unsetenv("SLIPWAY_ENGINE_TEST_TOKEN")
	_, err = WithData(p, g)
	if got, want := errString(err), "node web: secret app: environment variable SLIPWAY_ENGINE_TEST_TOKEN is not set"; got != want {
		t.Errorf("missing variable: error %q, want %q", got, want)
	}
}

func errString(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

// TestCheckReferences: a referenced Secret or ConfigMap that is missing, or lacks the key,
// fails the plan naming node, object, key and file:line; the node's own objects need none.
func TestCheckReferences(t *testing.T) {
	t.Setenv("SLIPWAY_ENGINE_TEST_TOKEN", "x")
	g, _ := configPlan(t)
	obj := func(kind, name string, keys ...string) (plan.Key, *unstructured.Unstructured) {
		data := map[string]any{}
		for _, k := range keys {
			data[k] = ""
		}
		u := &unstructured.Unstructured{Object: map[string]any{"kind": kind, "data": data}}
		u.SetName(name)
		return plan.Key{Kind: kind, Namespace: "demo", Name: name}, u
	}
	file := g.File
	tests := []struct {
		name    string
		objects [][3]string // kind, name, key
		want    []string
	}{
		{"all there", [][3]string{{"Secret", "db", "password"}, {"ConfigMap", "settings", "level"}, {"Secret", "web-tls", "tls.crt"}}, nil},
		{"secret missing", [][3]string{{"ConfigMap", "settings", "level"}, {"Secret", "web-tls", "tls.crt"}}, []string{
			"node web: env DB: Secret db does not exist in namespace demo (" + file + ":6)",
		}},
		{"key missing, mounted secret missing", [][3]string{{"Secret", "db", "user"}, {"ConfigMap", "settings", "level"}}, []string{
			"node web: env DB: Secret db has no key password (" + file + ":6)",
			"node web: files /etc/tls: Secret web-tls does not exist in namespace demo (" + file + ":10)",
		}},
	}
	for _, tt := range tests {
		for _, typed := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s, typed %v", tt.name, typed), func(t *testing.T) {
				live := map[plan.Key]plan.Object{}
				for _, o := range tt.objects {
					k, u := obj(o[0], o[1], o[2])
					live[k] = u
					if typed {
						live[k] = kube.Typed(u)
					}
				}
				err := CheckReferences(g, "demo", live)
				var got []string
				if err != nil {
					got = strings.Split(err.Error(), "\n")
				}
				if diff := cmp.Diff(tt.want, got); diff != "" {
					t.Errorf("errors (-want +got):\n%s", diff)
				}
			})
		}
	}
}
