package plan

import (
	"encoding/json"
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

// Each lane's part agrees with what the plan holds: its counts are the plan's lane totals
// (Totals, and the move's unlisted one), a section exactly when it changes anything (but for
// the lanes whose rows stand in the nodes' sections), and a clause of apply's line too (but
// for the move, whose deletions count among the plan's, and the migrations, which the
// rollouts report); a refused total (a DNS conflict) is no change of its lane.
func TestLanePartsAgreeWithCounts(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    *Plan
		want map[string]int // the lanes' totals not zero
	}{
		{"none", &Plan{}, map[string]int{}},
		{"records", &Plan{Nodes: []NodePlan{{Node: "web", Records: []RecordChange{
			{Name: "a.example.org", Kind: "address", Action: Create}, {Name: "b.example.org", Kind: "address", Action: Conflict}}}}},
			map[string]int{"records": 1, "recordConflicts": 1}},
		{"record conflict", &Plan{Nodes: []NodePlan{{Node: "web", Records: []RecordChange{{Name: "b.example.org", Kind: "address", Action: Conflict}}}}},
			map[string]int{"recordConflicts": 1}},
		{"migration", &Plan{Nodes: []NodePlan{{Node: "db", Migration: &Migration{From: "1", To: "2"}}, {Node: "web", RemoveCopy: &Copy{To: "1"}}}},
			map[string]int{"migrate": 1, "removeCopy": 1}},
		{"move", &Plan{Namespace: "new", Move: &Move{From: "old"}}, map[string]int{"move": 1}},
		{"spire", &Plan{Spire: []SpireChange{{What: SpireEntry, Name: "spiffe://td/x", Action: Delete}}}, map[string]int{"spire": 1}},
		{"central", &Plan{Central: []CentralChange{{What: CentralDatabase, Name: "shop.db", Action: Create}}}, map[string]int{"central": 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tot := tc.p.Totals()
			got := map[string]int{}
			for _, n := range tot.Lanes {
				if n.N != 0 {
					got[n.Key] += n.N
				}
				if n.What == "" || (n.Text == "") != n.Unlisted {
					t.Errorf("total %s: words %q, clause %q, unlisted %v", n.Key, n.What, n.Text, n.Unlisted)
				}
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("the lanes' totals (-want +got):\n%s", d)
			}
			if tot.Counts != tc.p.Counts() || tot.Zero() == (len(tc.want) > 0) || tc.p.HasChanges() != (len(tc.want) > 0) {
				t.Errorf("totals %+v: zero %v, HasChanges %v", tot, tot.Zero(), tc.p.HasChanges())
			}
			for i, l := range tc.p.Lanes() {
				n := 0
				for _, c := range l.Counts() {
					if c.Tone != ToneRefused {
						n += c.N
					}
				}
				_, inNodes := l.(NodeLane)
				applied := l.Applied()
				summed := n > 0 && (i == 0 || i > 2)
				if (applied != "") != summed || (len(l.Sections()) > 0) != (n > 0 && !inNodes) {
					t.Errorf("lane %d with %d change(s): apply's clause %q, %d section(s)", i, n, applied, len(l.Sections()))
				}
			}
		})
	}
}

// A node's lanes give its rows, in the order of the lanes (its records, then its migration),
// and ui writes them without naming a lane; a value from outside slipway comes quoted.
func TestNodeRows(t *testing.T) {
	for _, tc := range []struct {
		name string
		np   NodePlan
		want []Row
	}{
		{"none", NodePlan{Node: "web", Changes: []Change{{Action: Update}}}, nil},
		{"records", NodePlan{Node: "web", Records: []RecordChange{
			{Name: "web.example.org", Kind: "address", Action: Create, New: []string{"A 192.0.2.1"}},
			{Name: "www.example.org", Kind: "address", Action: Conflict, Reason: "held by TXT \x1b[2K"},
		}}, []Row{
			{Action: Create, Text: "dns web.example.org: A 192.0.2.1"},
			{Action: Conflict, Text: `dns www.example.org: held by TXT \x1b[2K`},
		}},
		{"migration", NodePlan{Node: "db", Migration: &Migration{From: "", To: "2\n"}}, []Row{{Action: Update, Verb: "migrate",
			Text: `state version none -> 2\n`, Detail: []string{
				"the new pod copies /var/lib to /var/lib/.slipway-state/copy on its volume before the node starts; if the rollout fails,",
				"the template set back puts the copy back first and the state keeps version none; if it succeeds, the copy is removed",
			}}}},
		{"records then the copy", NodePlan{Node: "mx", RemoveCopy: &Copy{From: "1", To: "2"},
			Records: []RecordChange{{Name: "example.org", Kind: "mx", Action: Delete, Old: []string{"MX 10 mx.example.org."}}}}, []Row{
			{Action: Delete, Text: "dns example.org (mx): MX 10 mx.example.org."},
			{Action: Delete, Verb: "remove", Text: "copy of /var/lib taken at state version 1 (its migration to 2 ran ready)"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &Plan{Nodes: []NodePlan{tc.np}}
			if d := cmp.Diff(tc.want, p.NodeRows(tc.np)); d != "" {
				t.Errorf("rows of node %s (-want +got):\n%s", tc.np.Node, d)
			}
		})
	}
}

// A lane that lists its changes beside the nodes in `plan -o json` lists [] when it has
// none, never null.
func TestLaneJSON(t *testing.T) {
	var keys []string
	for _, l := range (&Plan{}).Lanes() {
		jl, ok := l.(JSONLane)
		if !ok {
			continue
		}
		key, value := jl.JSON()
		keys = append(keys, key)
		b, err := json.Marshal(value)
		if err != nil || string(b) != "[]" {
			t.Errorf("lane %q with no changes: %s, %v; want []", key, b, err)
		}
	}
	// docs/json.md documents these keys in this order, after drift.
	if d := cmp.Diff([]string{"spire", "central"}, keys); d != "" {
		t.Errorf("the lanes' keys in plan -o json (-want +got):\n%s", d)
	}
}
