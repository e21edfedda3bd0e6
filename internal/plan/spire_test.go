package plan

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestSpireSteps: the SPIRE lane's changes count as changes and run as one step before any
// node, after the group's own objects (the account spire-server among them).
func TestSpireSteps(t *testing.T) {
	cs := []SpireChange{
		{What: SpireAllow, Name: "demo:node-web", Node: "web", Action: Create, Cluster: "u-demo"},
		{What: SpireEntry, Name: "spiffe://example.org/k8s/u-demo/demo/node-web", Node: "web", Action: Create, Cluster: "u-demo",
			Entry: &SpireEntryDef{ID: "slipway.u-demo.alias.web", ParentID: "spiffe://example.org/spire/server", Selectors: []string{"k8s_psat:cluster:u-demo"}}},
	}
	for _, tc := range []struct {
		name  string
		group []Change
		want  []StepKind
	}{
		{"only spire changes", nil, []StepKind{StepSpire}},
		{"after the group's objects", []Change{{Key: Key{Kind: "ServiceAccount", Namespace: "demo", Name: "spire-server"}, Action: Create}},
			[]StepKind{StepApplyObjects, StepSpire}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &Plan{Namespace: "demo", Spire: cs, Nodes: []NodePlan{{Node: "", Changes: tc.group}}}
			if !p.HasChanges() || p.Totals().N("spire") != 2 {
				t.Fatalf("totals %+v", p.Totals())
			}
			s := BuildSteps(p, stepsGroup(), stepsLimit)
			var got []StepKind
			for _, st := range s.Before {
				got = append(got, st.Kind)
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("before (-want +got):\n%s", d)
			}
			last := s.Before[len(s.Before)-1]
			if len(last.Payload.(SpireChanges)) != 2 || !strings.Contains(last.String(), "1 allow-list, 1 entry") {
				t.Errorf("spire step %q with %d changes", last.String(), len(last.Payload.(SpireChanges)))
			}
		})
	}
	if got := cs[1].String(); got != "spire entry spiffe://example.org/k8s/u-demo/demo/node-web (parent spiffe://example.org/spire/server; k8s_psat:cluster:u-demo)" {
		t.Errorf("change text %q", got)
	}
	if p := (&Plan{}); p.HasChanges() {
		t.Error("an empty plan has changes")
	}
}
