package engine

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/spec"
	"slipway.dev/slipway/internal/state"
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

// TestCheckFreshRefusesAnotherState: a saved plan is checked in one place, the engine: for
// the group and namespace it was made for, and the state it was made against (serial and
// lineage), so that a state made again since with as many writes is not taken for it.
func TestCheckFreshRefusesAnotherState(t *testing.T) {
	grp := &spec.Group{Name: "demo"}
	doc := &state.Document{Group: "demo", Serial: 3, Lineage: "l-2"}
	for _, tc := range []struct {
		name string
		p    plan.Plan
		want string // "" accepted
	}{
		{"made against this state", plan.Plan{Group: "demo", Namespace: "demo", StateSerial: 3, StateLineage: "l-2"}, ""},
		{"another group", plan.Plan{Group: "other", Namespace: "demo", StateSerial: 3, StateLineage: "l-2"},
			"saved plan is for group other in namespace demo, not demo in demo"},
		{"another namespace", plan.Plan{Group: "demo", Namespace: "prod", StateSerial: 3, StateLineage: "l-2"},
			"saved plan is for group demo in namespace prod, not demo in demo"},
		{"another serial", plan.Plan{Group: "demo", Namespace: "demo", StateSerial: 2, StateLineage: "l-2"},
			"plan for group demo was made at state serial 2, the state is now at 3: plan again"},
		{"the same serial of another lineage", plan.Plan{Group: "demo", Namespace: "demo", StateSerial: 3, StateLineage: "l-1"},
			`plan for group demo was made against state lineage "l-1", the state is now of lineage "l-2" (made again since): plan again`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := New(Options{Kube: newFakeCluster()}).CheckFresh(context.Background(), &tc.p,
				Target{Group: grp, Namespace: "demo", Store: &memStore{Doc: doc}})
			got := ""
			if err != nil {
				got = err.Error()
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("CheckFresh (-want +got):\n%s", d)
			}
		})
	}
}
