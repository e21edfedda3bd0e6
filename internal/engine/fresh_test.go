package engine

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"slipway.dev/slipway/internal/plan"
)

func TestSamePlanSaysWhatMoved(t *testing.T) {
	k := plan.Key{Kind: "Service", Namespace: "demo", Name: "web"}
	saved := &plan.Plan{Images: []plan.Image{{Name: "web", Digest: "d", Push: true}},
		Nodes: []plan.NodePlan{{Node: "web", Changes: []plan.Change{{Key: k, Action: plan.Create}}}}}
	fresh := &plan.Plan{Images: []plan.Image{{Name: "web", Digest: "d"}},
		Nodes: []plan.NodePlan{{Node: "web", Changes: []plan.Change{{Key: k, Action: plan.Update}}}}}
	err := samePlan(saved, fresh)
	if err == nil {
		t.Fatal("samePlan accepted a plan whose totals moved")
	}
	want := "saved plan: the cluster or the group file changed since the plan was made: " +
		"images to push: 1 planned, 0 now; objects to create: 1 planned, 0 now; objects to update: 0 planned, 1 now: plan again"
	if d := cmp.Diff(want, err.Error()); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	if got := countsMoved(plan.Counts{Create: 1}, plan.Counts{Create: 1, Conflict: 1}); got != "conflicts: 0 planned, 1 now" {
		t.Errorf("countsMoved of a new conflict = %q", got)
	}
}
