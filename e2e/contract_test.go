package e2e

import (
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"slipway.dev/slipway/internal/devcluster"
	"slipway.dev/slipway/internal/devcluster/devtest"
	"slipway.dev/slipway/internal/kube"
)

// envOf resolves the variable name of the pod's first container as the kubelet does: a value,
// or a downward-API field of the pod itself. kwok runs no container, so this reads what the
// container would get from the pod object the API server holds.
func envOf(t *testing.T, p *corev1.Pod, name string) string {
	t.Helper()
	for _, e := range p.Spec.Containers[0].Env {
		if e.Name != name {
			continue
		}
		if e.ValueFrom == nil {
			return e.Value
		}
		if f := e.ValueFrom.FieldRef; f != nil {
			switch f.FieldPath {
			case "metadata.uid":
				return string(p.UID)
			case "metadata.name":
				return p.Name
			}
		}
		t.Fatalf("pod %s: env %s: a source this test does not resolve: %+v", p.Name, name, e.ValueFrom)
	}
	t.Fatalf("pod %s: no env %s", p.Name, name)
	return ""
}

// Every pod of a role has its own machine ID (FR-013, SC-005a): container_uuid is the pod's
// UID, so two replicas differ and neither has the main pod's; the main pod keeps the node's
// machine ID from the state.
func TestRolePodsOwnMachineIDs(t *testing.T) {
	t.Parallel()
	g := NewGroup(t, "roleid", helloGroup, "web", "db")
	g.MustRun(0, "apply", "--yes")
	st := g.State().State
	pods, err := g.Kube.Clientset.CoreV1().Pods(g.Name).List(context.Background(), metav1.ListOptions{LabelSelector: "slipway.dev/node=web"})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]string{} // machine ID → pod
	workers := 0
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.DeletionTimestamp != nil {
			continue
		}
		id := envOf(t, p, "container_uuid")
		if id == "" {
			t.Errorf("pod %s: empty container_uuid", p.Name)
		}
		if other, dup := seen[id]; dup {
			t.Errorf("pods %s and %s share the machine ID %s", other, p.Name, id)
		}
		seen[id] = p.Name
		switch p.Labels["app.kubernetes.io/name"] {
		case "web":
			if id != st.Nodes["web"].MachineID {
				t.Errorf("main pod %s: container_uuid %s, the state has %s", p.Name, id, st.Nodes["web"].MachineID)
			}
		case "web-worker":
			workers++
		}
	}
	if workers != 2 {
		t.Fatalf("web-worker: %d pods, want 2 (%d pods of node web)", workers, len(pods.Items))
	}
}

// Without a state, render makes the machine IDs and records them (SPEC §9: the same input
// renders the same bytes): a second render, and a kustomize package written twice, are
// byte-identical, and apply deploys the IDs render printed. A render that made nothing new
// writes nothing.
func TestRenderReproducibleWithoutState(t *testing.T) {
	t.Parallel()
	g := NewGroup(t, "rerender", helloGroup, "web", "db")
	first := g.MustRun(0, "render", "--push")
	second := g.MustRun(0, "render")
	if d := cmp.Diff(first.Stdout, second.Stdout); d != "" {
		t.Fatalf("two renders without a state differ (-first +second):\n%s", d)
	}
	g.MustRun(0, "render", "--out", "pkg1")
	g.MustRun(0, "render", "--out", "pkg2")
	if d := cmp.Diff(readTree(t, filepath.Join(g.Dir, "pkg1")), readTree(t, filepath.Join(g.Dir, "pkg2"))); d != "" {
		t.Fatalf("two packages differ (-pkg1 +pkg2):\n%s", d)
	}
	st := g.State().State
	for _, n := range []string{"web", "db"} {
		id := st.Nodes[n].MachineID
		if id == "" || !strings.Contains(first.Stdout, "value: "+id) {
			t.Fatalf("node %s: machine ID %q in the state, not in the rendered YAML", n, id)
		}
	}
	g.MustRun(0, "apply", "--yes")
	for _, n := range []string{"web", "db"} {
		if got := machineIDOf(t, g, n); got != st.Nodes[n].MachineID {
			t.Errorf("node %s: apply deployed machine ID %s, render printed %s", n, got, st.Nodes[n].MachineID)
		}
	}
	serial := g.State().State.Serial
	third := g.MustRun(0, "render")
	if d := cmp.Diff(first.Stdout, third.Stdout); d != "" {
		t.Errorf("render after apply differs (-first +third):\n%s", d)
	}
	if got := g.State().State.Serial; got != serial {
		t.Errorf("a render with every ID known wrote the state: serial %d, was %d", got, serial)
	}
}

// readTree maps each file under dir (relative path) to its content.
func readTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		out[rel] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// The dev cluster's API server (1.37.2) has the feature gate ContainerStopSignals off: plan
// finds out with one dry run, gives init: systemd pods no stop signal (which the server
// would drop, a change in every plan) and says so once, as a note.
func TestStopSignalUnsupported(t *testing.T) {
	t.Parallel()
	g := NewGroup(t, "stopsig", helloGroup, "web", "db")
	r := g.MustRun(0, "plan", "-o", "json", "-out", "plan.json")
	var v struct {
		Notes []string `json:"notes"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &v); err != nil {
		t.Fatalf("plan -o json: %v\n%s", err, r)
	}
	if len(v.Notes) != 1 || !strings.Contains(v.Notes[0], "ContainerStopSignals") {
		t.Errorf("plan notes %q: want one note naming ContainerStopSignals", v.Notes)
	}
	saved, err := os.ReadFile(filepath.Join(g.Dir, "plan.json"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(saved), `"stopSignal":`) {
		t.Errorf("the planned objects have a stop signal the cluster would drop")
	}
	if !strings.Contains(string(saved), "systemctl") {
		t.Fatalf("the group has no init: systemd node: the test proves nothing")
	}
	if r := g.MustRun(0, "plan"); strings.Count(r.Stderr, "note: init: systemd pods get no lifecycle.stopSignal") != 1 || strings.Contains(r.Stdout, "ContainerStopSignals") {
		t.Errorf("plan text: want the note once on stderr, got %s", r)
	}
	g.MustRun(0, "apply", "--yes")
	if r := g.MustRun(0, "plan", "--detailed-exitcode"); r.Stdout != "No changes.\n" {
		t.Errorf("plan after apply: want only No changes. on stdout, got %s", r)
	}
}

// stored drops the dry runs from reqs: what is left may have stored something.
func stored(reqs []devtest.Request) []devtest.Request {
	return slices.DeleteFunc(slices.Clone(reqs), func(r devtest.Request) bool { return r.DryRun })
}

// Where the cluster keeps a container's stop signal (a second dev cluster, started with the
// feature gate ContainerStopSignals on), plan and apply give every init: systemd pod
// SIGRTMIN+3, with the pod's OS that the API requires for it, and say nothing about it; the
// init: none node keeps the runtime's default; the next plan has no changes.
func TestStopSignalSupported(t *testing.T) {
	t.Parallel()
	g := NewGroup(t, "stopsigon", helloGroup, "web", "db")
	env, _, err := devcluster.Up(context.Background(), devcluster.Options{
		// Core: the publishing parts listen on fixed ports the shared environment holds, and
		// this test publishes nothing.
		Dir: filepath.Join(t.TempDir(), "dev"), FeatureGates: []string{"ContainerStopSignals=true"}, Core: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := devcluster.Down(env.Dir); err != nil {
			t.Errorf("dev down %s: %v", env.Dir, err)
		}
	})
	if g.Kube, err = kube.New(env.Kubeconfig, ""); err != nil {
		t.Fatal(err)
	}
	g.Env, g.Kubeconfig = env, env.Kubeconfig
	r := g.MustRun(0, "apply", "--yes")
	if strings.Contains(r.Stdout+r.Stderr, "ContainerStopSignals") {
		t.Errorf("apply noted missing stop signals on a cluster that has them: %s", r)
	}
	for _, tc := range []struct {
		deployment string
		want       string
	}{{"web", "SIGRTMIN+3"}, {"web-worker", "SIGRTMIN+3"}, {"db", ""}} {
		d, err := g.Kube.Clientset.AppsV1().Deployments(g.Name).Get(context.Background(), tc.deployment, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ps := d.Spec.Template.Spec
		got := ""
		if l := ps.Containers[0].Lifecycle; l != nil && l.StopSignal != nil {
			got = string(*l.StopSignal)
		}
		if got != tc.want || (got != "" && (ps.OS == nil || ps.OS.Name != corev1.Linux)) {
			t.Errorf("Deployment %s: stop signal %q, os %v; want %q", tc.deployment, got, ps.OS, tc.want)
		}
	}
	if r := g.MustRun(0, "plan", "--detailed-exitcode"); r.Stdout != "No changes.\n" || strings.Contains(r.Stderr, "note:") {
		t.Errorf("plan after apply: want No changes. and no note, got %s", r)
	}
}
