package plan

import (
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"slipway.dev/slipway/internal/spec"
)

// A lane's changes go into a saved plan through the plan's own field and come back as its
// steps' payloads: the steps apply builds again from a plan read back carry what the plan
// showed, and say it as they did.
func TestSavedPlanKeepsLanePayloads(t *testing.T) {
	p := &Plan{Version: FormatVersion, Group: "shop", Namespace: "demo",
		Spire: []SpireChange{{What: SpireAllow, Name: "demo:node-web", Action: Create, Cluster: "uid-demo"}},
		Central: []CentralChange{
			{What: CentralLogin, Key: "app", Name: "shop.app", Action: Create},
			{What: CentralKV, Key: "old", Name: "secret/slipway/shop/old", Action: Delete},
		}}
	g := &spec.Group{Name: "shop"}
	p.Steps = BuildSteps(p, g, nil)
	path := filepath.Join(t.TempDir(), "plan.json")
	if err := p.Write(path); err != nil {
		t.Fatal(err)
	}
	back, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	again := BuildSteps(back, g, nil)
	for _, tc := range []struct {
		name      string
		want, got []Step
	}{{"before the nodes", p.Steps.Before, again.Before}, {"after the nodes", p.Steps.After, again.After}} {
		t.Run(tc.name, func(t *testing.T) {
			if d := cmp.Diff(tc.want, tc.got); d != "" {
				t.Errorf("steps built from the plan read back (-want +got):\n%s", d)
			}
			for i := range tc.got {
				if tc.got[i].String() != tc.want[i].String() {
					t.Errorf("step %d says %q, the plan showed %q", i, tc.got[i], tc.want[i])
				}
			}
		})
	}
	if len(again.Before) != 2 || again.Before[0].Kind != StepSpire || again.Before[1].Kind != StepCentral {
		t.Errorf("steps before the nodes: %v, want spire then central", again.Before)
	}
}

// Each lane's part agrees with the plan's counts: a section exactly when it changes anything,
// and a summary too but for the move, whose deletions count among the plan's.
func TestLanePartsAgreeWithCounts(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    *Plan
	}{
		{"none", &Plan{}},
		{"move", &Plan{Namespace: "new", Move: &Move{From: "old"}}},
		{"spire", &Plan{Spire: []SpireChange{{What: SpireEntry, Name: "spiffe://td/x", Action: Delete}}}},
		{"central", &Plan{Central: []CentralChange{{What: CentralDatabase, Name: "shop.db", Action: Create}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.p.Counts()
			for i, l := range tc.p.Lanes() {
				n := []int{c.Move, c.Spire, c.Central}[i]
				planned, applied := l.Summary()
				summed := n > 0 && i > 0
				if (planned != "") != summed || (applied != "") != summed || (len(l.Sections()) > 0) != (n > 0) {
					t.Errorf("lane %d with %d change(s): summary %q / %q, %d section(s)", i, n, planned, applied, len(l.Sections()))
				}
			}
		})
	}
}
