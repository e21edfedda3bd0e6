package engine

import (
	"context"
	"fmt"
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
	if got := countsMoved(plan.Totals{Counts: plan.Counts{Create: 1}}, plan.Totals{Counts: plan.Counts{Create: 1, Conflict: 1}}); got != "conflicts: 0 planned, 1 now" {
		t.Errorf("countsMoved of a new conflict = %q", got)
	}
}

// TestSamePlanNamesTheLanesThatMoved: a saved plan refused because only a lane's totals moved
// (its DNS records, its SPIRE changes, the namespace move) says which, in words, as it does
// for the objects: not "...: : plan again".
func TestSamePlanNamesTheLanesThatMoved(t *testing.T) {
	records := func(actions ...plan.Action) []plan.NodePlan {
		np := plan.NodePlan{Node: "web"}
		for i, a := range actions {
			np.Records = append(np.Records, plan.RecordChange{Name: fmt.Sprintf("n%d.example.org", i), Kind: "address", Action: a})
		}
		return []plan.NodePlan{np}
	}
	entry := plan.SpireChange{What: plan.SpireEntry, Name: "spiffe://example.org/x", Action: plan.Create}
	for _, tc := range []struct {
		name         string
		saved, fresh *plan.Plan
		want         string
	}{
		{"records", &plan.Plan{Nodes: records(plan.Create)}, &plan.Plan{Nodes: records(plan.Create, plan.Update)},
			"DNS record sets to publish, change or retire: 1 planned, 2 now"},
		{"a record conflict", &plan.Plan{Nodes: records(plan.Create)}, &plan.Plan{Nodes: records(plan.Create, plan.Conflict)},
			"DNS names held by records slipway does not own: 0 planned, 1 now"},
		{"spire", &plan.Plan{Spire: []plan.SpireChange{entry}}, &plan.Plan{},
			"SPIRE changes: 1 planned, 0 now"},
		{"central", &plan.Plan{}, &plan.Plan{Central: []plan.CentralChange{{What: plan.CentralDatabase, Name: "shop.db", Action: plan.Create}}},
			"central service changes: 0 planned, 1 now"},
		{"a migration and a copy", &plan.Plan{Nodes: []plan.NodePlan{{Node: "db", Migration: &plan.Migration{From: "1", To: "2"}}}},
			&plan.Plan{Nodes: []plan.NodePlan{{Node: "db", RemoveCopy: &plan.Copy{From: "1", To: "2"}}}},
			"state migrations: 1 planned, 0 now; copies of /var/lib to remove: 0 planned, 1 now"},
		{"the move", &plan.Plan{Namespace: "new", Move: &plan.Move{From: "old"}}, &plan.Plan{Namespace: "new"},
			"namespace moves: 1 planned, 0 now"},
		{"objects and records", &plan.Plan{Nodes: records(plan.Create)},
			&plan.Plan{Nodes: []plan.NodePlan{{Node: "web", Changes: []plan.Change{{Action: plan.Create}}}}},
			"objects to create: 0 planned, 1 now; DNS record sets to publish, change or retire: 1 planned, 0 now"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := samePlan(tc.saved, tc.fresh)
			got := ""
			if err != nil {
				got = err.Error()
			}
			want := "saved plan: the cluster or the group file changed since the plan was made: " + tc.want + ": plan again"
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
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
