package migrate

import (
	"context"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"slipway.dev/slipway/internal/engine/enginetest"
	"slipway.dev/slipway/internal/engine/lane"
	"slipway.dev/slipway/internal/spec"
	"slipway.dev/slipway/internal/state"
)

// TestForeignJobs (issue 35 item 3, issue 43 item 12): the plan looks for someone else's Job
// <node>-state for every node whose copy of /var/lib apply would remove: the copy the state
// says is held, and the one a migration takes (a version the state did not run ready with).
// The shared fake cluster stands in for the API server, holding a Job of that name for every node.
func TestForeignJobs(t *testing.T) {
	nodes := []string{"held", "migrates", "fresh", "same", "unversioned", "ours"}
	f := enginetest.NewCluster()
	f.LiveJobs = map[string]*batchv1.Job{}
	for _, n := range nodes {
		labels := map[string]string{"app": "backup"}
		if n == "ours" { // slipway's own removal Job of the group: never a conflict
			labels = map[string]string{spec.LabelManagedBy: spec.ManagedBy, spec.LabelGroup: "demo"}
		}
		f.LiveJobs["demo/"+n+"-state"] = &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: n + "-state", Namespace: "demo", Labels: labels}}
	}
	g := &spec.Group{Name: "demo"}
	for _, n := range nodes {
		g.Nodes = append(g.Nodes, &spec.Node{Name: n})
	}
	doc := &state.Document{Group: "demo", Nodes: map[string]*state.NodeState{
		"held":        {StateVersion: "2", Copy: &state.StateCopy{From: "1", To: "2"}},
		"migrates":    {StateVersion: "2"},
		"same":        {StateVersion: "2"},
		"unversioned": {},
		"ours":        {StateVersion: "1"},
		// "fresh" is not in the state: created by this plan, it has no data to copy.
	}}
	versions := map[string]string{"held": "2", "migrates": "3", "fresh": "1", "same": "2", "unversioned": "", "ours": "2"}
	l := New(lane.Env{}, f)
	got, err := l.foreignJobs(context.Background(), lane.Target{Group: g, Namespace: "demo"}, doc, versions)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for n, j := range got {
		names = append(names, n)
		if j.GetObjectKind().GroupVersionKind().Kind != "Job" {
			t.Errorf("node %s: the foreign Job has kind %q, want Job (the conflict names it)", n, j.GetObjectKind().GroupVersionKind().Kind)
		}
	}
	slices.Sort(names)
	if d := cmp.Diff([]string{"held", "migrates"}, names); d != "" {
		t.Errorf("nodes with a foreign removal Job (-want +got):\n%s", d)
	}
}
