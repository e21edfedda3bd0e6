package render_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"slipway.dev/slipway/internal/render"
	"slipway.dev/slipway/internal/render/rendertest"
	"slipway.dev/slipway/internal/spec"
	"slipway.dev/slipway/internal/testkit"
)

// testSecretKey and fakeInput are rendertest's, shared with the tests of e2e/render.
var (
	testSecretKey = rendertest.SecretKey
	fakeInput     = rendertest.Input
)

func TestGolden(t *testing.T) {
	tests := []struct {
		name, file, golden string
		stopSignal         bool
	}{
		{"fixture", "testdata/group/slipway.yaml", "testdata/group.golden.yaml", false},
		{"fixture with stop signal", "testdata/group/slipway.yaml", "testdata/group-stopsignal.golden.yaml", true},
		{"example hello", "../../examples/hello/slipway.yaml", "testdata/hello.golden.yaml", false},
		{"example full", "../../examples/full/slipway.yaml", "testdata/full.golden.yaml", false},
		{"example publish", "../../examples/publish/slipway.yaml", "testdata/publish.golden.yaml", false},
		{"labels and annotations", "testdata/workload/labels.yaml", "testdata/workload/labels.golden.yaml", false},
		{"placement", "testdata/workload/placement.yaml", "testdata/workload/placement.golden.yaml", false},
		{"disruption", "testdata/workload/disruption.yaml", "testdata/workload/disruption.golden.yaml", false},
		{"probes and stopping", "testdata/workload/probes.yaml", "testdata/workload/probes.golden.yaml", false},
		{"probes and stopping with stop signal", "testdata/workload/probes.yaml", "testdata/workload/probes-stopsignal.golden.yaml", true},
		{"firewall reach", "testdata/firewall/reach.yaml", "testdata/firewall/reach.golden.yaml", false},
		{"secrets and config", "testdata/workload/config.yaml", "testdata/workload/config.golden.yaml", false},
		{"a role's own env, config and secrets", "testdata/workload/role-config.yaml", "testdata/workload/role-config.golden.yaml", false},
		{"service monitor", "testdata/workload/servicemonitor.yaml", "testdata/workload/servicemonitor.golden.yaml", false},
		{"state version", "testdata/workload/state.yaml", "testdata/workload/state.golden.yaml", false},
		{"secrets sidecar and companion", "testdata/workload/sidecar.yaml", "testdata/workload/sidecar.golden.yaml", false},
		{"spire", "testdata/workload/spire.yaml", "testdata/workload/spire.golden.yaml", false},
	}
	t.Setenv("SLIPWAY_RENDER_TOKEN", "render-fixture-token") // read by config.yaml's secret
	// The publish example: a TSIG secret to load, and the dev environment's Gateway.
	t.Setenv(spec.EnvTSIGSecret, "bm90IGEga2V5")
	t.Setenv(spec.EnvTSIGSecretFile, "")
	t.Setenv(spec.EnvGateway, "slipway-dev/public")
	t.Setenv(spec.EnvDNSServer, "")
	t.Setenv("APP_TOKEN", "example") // and these by examples/full's
	t.Setenv("SSO_CLIENT_SECRET", "example")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, err := spec.Load(tt.file)
			if err != nil {
				t.Fatal(err)
			}
			in := fakeInput(g)
			in.StopSignal = tt.stopSignal
			in.ServiceMonitors = strings.Contains(tt.file, "servicemonitor") || strings.Contains(tt.file, "examples/full")
			objs, err := render.Objects(in)
			if err != nil {
				t.Fatal(err)
			}
			got, err := render.YAML(objs)
			if err != nil {
				t.Fatal(err)
			}
			testkit.Golden(t, tt.golden, got)
			again, _ := render.Objects(in)
			if b, _ := render.YAML(again); string(b) != string(got) {
				t.Error("a second render of the same input differs")
			}
		})
	}
}

func load(t testing.TB, file string) []render.Object {
	t.Helper()
	g, err := spec.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := render.Objects(fakeInput(g))
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// find is rendertest's.
func find[T render.Object](objs []render.Object, kind, name string) (T, bool) {
	return rendertest.Find[T](objs, kind, name)
}

// TestRules checks the rules of SPEC §5 the golden files could hide in their length.
func TestRules(t *testing.T) {
	objs := load(t, "testdata/group/slipway.yaml")
	var order []string
	for _, o := range objs {
		order = append(order, o.GetObjectKind().GroupVersionKind().Kind+"/"+o.GetName())
		if o.GetNamespace() != "golden-ns" && o.GetObjectKind().GroupVersionKind().Kind != "Namespace" {
			t.Errorf("%s/%s in namespace %q", o.GetObjectKind().GroupVersionKind().Kind, o.GetName(), o.GetNamespace())
		}
		l := o.GetLabels()
		if l[spec.LabelManagedBy] != "slipway" || l[spec.LabelGroup] != "golden" {
			t.Errorf("%s/%s labels %v", o.GetObjectKind().GroupVersionKind().Kind, o.GetName(), l)
		}
	}
	wantOrder := []string{
		"Namespace/golden-ns",
		"NetworkPolicy/default-deny", "NetworkPolicy/app", "NetworkPolicy/app-sso", "NetworkPolicy/app-worker", "NetworkPolicy/app-worker-metrics",
		"NetworkPolicy/edge", "NetworkPolicy/quiet",
		"ServiceAccount/node-app", "ServiceAccount/node-edge", "ServiceAccount/node-quiet",
		"PersistentVolumeClaim/app-state", "PersistentVolumeClaim/edge-state", "PersistentVolumeClaim/quiet-state",
		"Service/app", "Service/app-sso", "Service/app-worker", "Service/app-worker-metrics", "Service/edge",
		"Deployment/app", "Deployment/app-idle", "Deployment/app-sso", "Deployment/app-worker", "Deployment/edge", "Deployment/quiet",
		"PodDisruptionBudget/app-worker", // the one role of 2 or more replicas
	}
	if diff := cmp.Diff(wantOrder, order); diff != "" {
		t.Errorf("objects (-want +got):\n%s", diff)
	}
	if _, ok := find[*corev1.Service](objs, "Service", "quiet"); ok {
		t.Error("node quiet has no published, admin or operator port but got a Service")
	}
	svc, _ := find[*corev1.Service](objs, "Service", "edge")
	var names []string
	for _, p := range svc.Spec.Ports {
		names = append(names, p.Name)
	}
	if diff := cmp.Diff([]string{"tcp-80", "tcp-443", "udp-53", "tcp-22", "tcp-9100"}, names); diff != "" {
		t.Errorf("Service edge ports (-want +got):\n%s", diff)
	}
	if svc.Spec.Type != corev1.ServiceTypeLoadBalancer || svc.Spec.ExternalTrafficPolicy != corev1.ServiceExternalTrafficPolicyLocal {
		t.Errorf("Service edge: type %s, externalTrafficPolicy %s", svc.Spec.Type, svc.Spec.ExternalTrafficPolicy)
	}
	d, _ := find[*appsv1.Deployment](objs, "Deployment", "edge")
	ps := d.Spec.Template.Spec
	if *d.Spec.Replicas != 1 || d.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType || *ps.HostUsers || *ps.RuntimeClassName != "systemd" {
		t.Errorf("Deployment edge: replicas %d, strategy %s, hostUsers %v, runtimeClassName %v", *d.Spec.Replicas, d.Spec.Strategy.Type, *ps.HostUsers, *ps.RuntimeClassName)
	}
	if ps.Containers[0].Env[0].Name != "container_uuid" || ps.Containers[0].Env[1] != (corev1.EnvVar{Name: "SLIPWAY_NODE", Value: "edge"}) {
		t.Errorf("Deployment edge env %v", ps.Containers[0].Env)
	}
	w, _ := find[*appsv1.Deployment](objs, "Deployment", "app-worker")
	if got := w.Spec.Template.Spec.Containers[0].Args; !cmp.Equal(got, []string{"slipway.role=worker"}) {
		t.Errorf("Deployment app-worker args %v", got)
	}
}

// TestRoleMachineID: every pod of a role has its own machine ID (FR-013, SC-005a), so
// container_uuid is the pod's UID, never a value all replicas share; the main pod keeps the
// node's ID from the state.
func TestRoleMachineID(t *testing.T) {
	objs := load(t, "testdata/group/slipway.yaml")
	podUID := corev1.EnvVar{Name: "container_uuid", ValueFrom: &corev1.EnvVarSource{
		FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.uid"}}}
	tests := []struct {
		deployment string
		want       corev1.EnvVar
	}{
		{"app", corev1.EnvVar{Name: "container_uuid", Value: "c52ada0f-761d-5270-98cc-e4cbb6de4cf2"}},
		{"app-worker", podUID}, // a role of the node's image
		{"app-idle", podUID},
		{"app-sso", podUID}, // a service role
	}
	for _, tt := range tests {
		t.Run(tt.deployment, func(t *testing.T) {
			d, ok := find[*appsv1.Deployment](objs, "Deployment", tt.deployment)
			if !ok {
				t.Fatalf("no Deployment %s", tt.deployment)
			}
			if diff := cmp.Diff(tt.want, d.Spec.Template.Spec.Containers[0].Env[0]); diff != "" {
				t.Errorf("container_uuid (-want +got):\n%s", diff)
			}
		})
	}
}

func TestMissingInputs(t *testing.T) {
	g, err := spec.Load("testdata/group/slipway.yaml")
	if err != nil {
		t.Fatal(err)
	}
	in := fakeInput(g)
	delete(in.Images, "edge")
	delete(in.Images, "app-sso")
	delete(in.MachineIDs, "quiet")
	in.Images["quiet"] = "registry.test/golden-ns/quiet:latest"
	_, err = render.Objects(in)
	want := strings.Join([]string{
		`render group golden: role sso of node app: no image (key "app-sso")`,
		`node edge: no image (key "edge")`,
		`node quiet: image registry.test/golden-ns/quiet:latest is not pinned by digest`,
		`node quiet: no machine ID (key "quiet")`,
	}, "\n")
	if err == nil || err.Error() != want {
		t.Errorf("Objects error:\n%v\nwant:\n%s", err, want)
	}
}

// TestWritePackage: the package's files, and what a render into a directory with earlier
// files replaces and removes: only slipway's own (issue 35, item 12).
func TestWritePackage(t *testing.T) {
	objs := load(t, "../../examples/hello/slipway.yaml")
	const header = "# Written by slipway render. Do not edit: render again.\n"
	dir := t.TempDir()
	write := func(name, content string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// An earlier render's files: its kustomization.yaml lists a file of a render before object
	// files had a header; a route of a node now gone has one.
	write("kustomization.yaml", "# Written by slipway render; `kubectl apply -k` this directory. Do not edit: render again.\n"+
		"resources:\n- service-old.yaml\n- ../outside.yaml\n")
	write("service-old.yaml", "kind: Service\n")
	write("deployment-gone.yaml", header+"kind: Deployment\n")
	write("tlsroute-gone.yaml", header+"kind: TLSRoute\n")
	// The operator's own, named like slipway's.
	write("deployment-mine.yaml", "kind: Deployment\n")
	write("README.md", "mine")
	if err := render.WritePackage(dir, objs); err != nil {
		t.Fatal(err)
	}
	first := readDir(t, dir)
	for _, gone := range []string{"service-old.yaml", "deployment-gone.yaml", "tlsroute-gone.yaml"} {
		if _, ok := first[gone]; ok {
			t.Errorf("%s, slipway's file of an object no longer rendered, was kept", gone)
		}
	}
	for _, kept := range []string{"deployment-mine.yaml", "README.md"} {
		if _, ok := first[kept]; !ok {
			t.Errorf("%s, a file slipway did not write, was removed", kept)
		}
	}
	testkit.Golden(t, "testdata/hello.kustomization.golden.yaml", []byte(first["kustomization.yaml"]))
	stream, _ := render.YAML(objs)
	var joined []string
	for _, o := range objs {
		f, ok := strings.CutPrefix(first[render.FileName(o)], header)
		if !ok {
			t.Errorf("%s does not start with slipway's header", render.FileName(o))
		}
		joined = append(joined, f)
	}
	if strings.Join(joined, "---\n") != string(stream) {
		t.Error("the package's files differ from the YAML stream")
	}
	if err := render.WritePackage(dir, load(t, "../../examples/hello/slipway.yaml")); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(first, readDir(t, dir)); diff != "" {
		t.Errorf("second render differs (-first +second):\n%s", diff)
	}
}

// TestWritePackageRefusesTheOperatorsFiles: a file of the operator's where render would write
// one of its own (an object's, kustomization.yaml) is refused, naming it, before any write.
func TestWritePackageRefusesTheOperatorsFiles(t *testing.T) {
	objs := load(t, "../../examples/hello/slipway.yaml")
	for _, name := range []string{"kustomization.yaml", render.FileName(objs[len(objs)-1])} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, name), []byte("mine\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			err := render.WritePackage(dir, objs)
			want := fmt.Sprintf("package %s: %s was not written by slipway render (no header of its own): render will not replace it; move it away or render into another directory", dir, name)
			if err == nil || err.Error() != want {
				t.Fatalf("WritePackage = %v, want %s", err, want)
			}
			if diff := cmp.Diff(map[string]string{name: "mine\n"}, readDir(t, dir)); diff != "" {
				t.Errorf("the directory after a refused render (-want +got):\n%s", diff)
			}
		})
	}
}

// readDir is rendertest's.
func readDir(t *testing.T, dir string) map[string]string { return rendertest.ReadDir(t, dir) }

func TestBadNamespace(t *testing.T) {
	g, err := spec.Load("../../examples/hello/slipway.yaml")
	if err != nil {
		t.Fatal(err)
	}
	in := fakeInput(g)
	in.Namespace = "Hello_World"
	if _, err := render.Objects(in); err == nil || err.Error() != `render group hello: namespace "Hello_World" is not a DNS label` {
		t.Errorf("Objects with a bad namespace: %v", err)
	}
}
