package e2e

// Issue 38: a node whose app changes moves between targets; its claim stays only when asked.

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// claimExists reports whether claim name exists in namespace ns.
func (g *Group) claimExists(ns, name string) bool {
	g.t.Helper()
	_, err := g.Kube.Clientset.CoreV1().PersistentVolumeClaims(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		g.t.Fatalf("claim %s/%s: %v", ns, name, err)
	}
	return err == nil
}

// TestTargetMoveKeepsClaim: db's app changes from data to front. The plan of target data says
// it moves and deletes its claim; with --keep-claims, apply removes its Deployment but keeps
// its claim and its state record, and target front creates it. The kept claim stays kept by
// runs that ask (no change), and a run that does not ask plans its delete.
func TestTargetMoveKeepsClaim(t *testing.T) {
	t.Parallel()
	g := NewGroup(t, "tmv", targetsGroup, "web", "cache", "db")
	front, data := g.Name+"-front", g.Name+"-data"
	dataKey := g.Name + ".data" // the state key of target data (spec.Identity)
	g.dropNamespaces(front, data)
	g.MustRun(0, "apply", "--yes", "--target", "front")
	g.MustRun(0, "apply", "--yes", "--target", "data")
	machineID := g.stateOf(dataKey).State.Nodes["db"].MachineID

	g.WriteFile("slipway.yaml", strings.ReplaceAll(strings.Replace(targetsGroup, "app: data", "app: front", 1), "{{GROUP}}", g.Name))
	r := g.MustRun(2, "plan", "--detailed-exitcode", "--target", "data")
	for _, want := range []string{"node db moved to target front (its app is now front)", "db-state"} {
		if !strings.Contains(r.Stdout+r.Stderr, want) {
			t.Errorf("plan --target data: no %q:\n%s", want, r)
		}
	}
	r = g.MustRun(0, "apply", "--yes", "--target", "data", "--keep-claims")
	if !strings.Contains(r.Stderr, "its claim "+data+"/db-state stays (--keep-claims)") {
		t.Errorf("apply --keep-claims does not say the claim stays:\n%s", r)
	}
	if got := g.deployments(data); len(got) != 0 {
		t.Errorf("Deployments left in %s: %v", data, got)
	}
	if !g.claimExists(data, "db-state") {
		t.Fatalf("apply --keep-claims deleted claim %s/db-state", data)
	}
	st := g.stateOf(dataKey).State
	if st == nil || st.Nodes["db"] == nil || st.Nodes["db"].MachineID != machineID {
		t.Errorf("state of target data: node db's record %+v, want its machine ID %s kept", st, machineID)
	}
	g.MustRun(0, "apply", "--yes", "--target", "front")
	if d := cmp.Diff([]string{"cache", "db", "web"}, g.deployments(front)); d != "" {
		t.Errorf("Deployments of %s (-want +got):\n%s", front, d)
	}
	// Kept while asked; a run that does not ask deletes it.
	g.MustRun(0, "plan", "--detailed-exitcode", "--target", "data", "--keep-claims")
	g.MustRun(2, "plan", "--detailed-exitcode", "--target", "data")
	g.MustRun(0, "apply", "--yes", "--target", "data")
	if g.claimExists(data, "db-state") {
		t.Errorf("apply without --keep-claims kept claim %s/db-state", data)
	}
	if st := g.stateOf(dataKey).State; st != nil && st.Nodes["db"] != nil {
		t.Errorf("state of target data still records db after its claim went: %+v", st.Nodes["db"])
	}
	g.MustRun(0, "destroy", "--yes", "--target", "front")
}
