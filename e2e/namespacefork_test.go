package e2e

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestNamespaceFork (issue 35 item 6): a run whose namespace (-n, K8S_NAMESPACE) is not the
// one the state records is refused before any change, naming both; `--move-namespace` moves
// the group: made anew in the new namespace with the same machine ID, its objects in the old
// one deleted but the claim, which stays with its data.
func TestNamespaceFork(t *testing.T) {
	t.Parallel()
	g := NewGroup(t, "nsfork", migrateGroup, "solo")
	g.MustRun(0, "apply", "--yes")
	old, other := g.Name, g.Name+"-b"
	g.dropNamespaces(other)
	st := g.State().State
	if st.Namespace != old {
		t.Fatalf("state namespace %q, want %q", st.Namespace, old)
	}
	claim := g.roClaimUID("solo")

	refusal := func(from string) string {
		return "records namespace " + old + ", but this run's namespace is " + other + " (from " + from + ")"
	}
	byEnv := *g
	byEnv.extraEnv = append(slices.Clone(g.extraEnv), "K8S_NAMESPACE="+other)
	for _, run := range []struct {
		g    *Group
		from string
		args []string
	}{
		{g, "-n", []string{"plan", "-n", other}},
		{g, "-n", []string{"apply", "--yes", "-n", other}},
		{g, "-n", []string{"status", "-n", other}},
		{g, "-n", []string{"destroy", "--yes", "-n", other}},
		{&byEnv, "K8S_NAMESPACE", []string{"apply", "--yes"}},
		{&byEnv, "K8S_NAMESPACE", []string{"plan", "-destroy"}},
	} {
		r := run.g.MustRun(1, run.args...)
		if !strings.Contains(r.Stderr, refusal(run.from)) || !strings.Contains(r.Stderr, "nothing was changed") {
			t.Errorf("%v: want the refusal %q, got %s", run.args, refusal(run.from), r)
		}
	}
	if g.namespaceExists(other) {
		t.Errorf("namespace %s was created by a refused run", other)
	}
	if d := cmp.Diff([]string{"solo"}, g.deployments(old)); d != "" {
		t.Errorf("Deployments of %s after the refused runs (-want +got):\n%s", old, d)
	}
	if after := g.State().State; after.Serial != st.Serial || after.Namespace != old {
		t.Errorf("state after the refused runs: serial %d, namespace %s; want %d, %s", after.Serial, after.Namespace, st.Serial, old)
	}

	p := g.MustRun(0, "plan", "-n", other, "--move-namespace")
	if want := "group " + g.Name + " moves from namespace " + old + " to " + other; !strings.Contains(p.Stderr, want) || !strings.Contains(p.Stderr, "its claims solo-state stay there") {
		t.Errorf("plan --move-namespace: want the note %q and the claim staying, got %s", want, p)
	}
	g.MustRun(0, "apply", "--yes", "-n", other, "--move-namespace")
	if d := cmp.Diff([]string{"solo"}, g.deployments(other)); d != "" {
		t.Errorf("Deployments of %s after the move (-want +got):\n%s", other, d)
	}
	if d := cmp.Diff([]string{"PersistentVolumeClaim/solo-state"}, g.groupObjects(old)); d != "" {
		t.Errorf("objects of the group left in %s after the move (-want +got):\n%s", old, d)
	}
	if got := g.roClaimUID("solo"); got != claim {
		t.Errorf("the claim in %s: UID %s, was %s", old, got, claim)
	}
	moved := g.State().State
	if moved.Namespace != other || moved.MovedFrom != "" || moved.Nodes["solo"].MachineID != st.Nodes["solo"].MachineID {
		t.Errorf("state after the move: namespace %q, movedFrom %q, machine ID %s; want %s, none, %s",
			moved.Namespace, moved.MovedFrom, moved.Nodes["solo"].MachineID, other, st.Nodes["solo"].MachineID)
	}
	g.MustRun(0, "plan", "--detailed-exitcode", "-n", other)
	r := g.MustRun(1, "plan")
	if want := "records namespace " + other + ", but this run's namespace is " + old; !strings.Contains(r.Stderr, want) {
		t.Errorf("plan without -n after the move: want %q, got %s", want, r)
	}
	g.MustRun(0, "destroy", "--yes", "-n", other)
}

// namespaceExists reports whether namespace ns exists.
func (g *Group) namespaceExists(ns string) bool {
	g.t.Helper()
	_, err := g.Kube.Clientset.CoreV1().Namespaces().Get(context.Background(), ns, metav1.GetOptions{})
	return err == nil
}
