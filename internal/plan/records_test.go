package plan

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// The DNS lane's steps: a node's retired sets before its objects change, its names published
// after its rollout, a node with only record changes gets only those, a conflict refuses its
// node (no step at all) and not the others, a removed node's sets are retired before its
// objects go.
func TestBuildStepsDNS(t *testing.T) {
	dep := Key{Kind: "Deployment", Namespace: "demo", Name: "db"}
	add := RecordChange{Name: "db.example.org", Kind: "address", Action: Create, New: []string{"A 192.0.2.1"}}
	gone := RecordChange{Name: "old.example.org", Kind: "address", Action: Delete, Old: []string{"A 192.0.2.1"}}
	conflict := RecordChange{Name: "web.example.org", Kind: "address", Action: Conflict, Reason: "dns name web.example.org: conflict"}
	mx := RecordChange{Name: "example.org", Kind: "mx", Action: Update, Old: []string{"MX 10 a.example.org"}, New: []string{"MX 10 db.example.org"}}
	p := &Plan{Namespace: "demo", Nodes: []NodePlan{
		{Node: "db", Changes: []Change{{Key: dep, Action: Update}}, Records: []RecordChange{gone, add, mx}},
		{Node: "web", Records: []RecordChange{conflict}},
		{Node: "gone", Removed: true, Changes: []Change{{Key: Key{Kind: "Deployment", Namespace: "demo", Name: "gone"}, Action: Delete}},
			Records: []RecordChange{{Name: "gone.example.org", Kind: "address", Action: Delete}}},
	}}
	got := BuildSteps(p, stepsGroup(), stepsLimit)
	want := &Steps{
		Nodes: []NodeSteps{
			{Node: "db", Steps: []Step{
				{Kind: StepRetireDNS, Node: "db", Payload: DNSRetire{[]RecordChange{gone}}},
				{Kind: StepApplyDeployment, Node: "db", Object: &dep, Action: Update},
				{Kind: StepAwaitRollout, Node: "db", Object: &dep, Replicas: 1, Limit: 2 * time.Minute, Rollback: RollbackLastReady},
				{Kind: StepPublishDNS, Node: "db", Payload: DNSPublish{[]RecordChange{add, mx}}},
			}},
			{Node: "web"},
		},
		After: []Step{
			{Kind: StepRetireDNS, Node: "gone", Payload: DNSRetire{[]RecordChange{{Name: "gone.example.org", Kind: "address", Action: Delete}}}},
			{Kind: StepRemoveNode, Node: "gone", Objects: []Key{{Kind: "Deployment", Namespace: "demo", Name: "gone"}}},
		},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("steps (-want +got):\n%s", d)
	}
	if err := p.NodeBlocked("web"); err == nil {
		t.Error("a node whose name is held by foreign records is not refused")
	}
	if err := p.Blocked(); err != nil {
		t.Errorf("a DNS conflict blocks the whole plan: %v", err)
	}
	if c := p.Totals(); c.N("records") != 4 || c.N("recordConflicts") != 1 {
		t.Errorf("totals = %+v, want 4 record sets and 1 conflict", c)
	}
	if got := (RecordChange{Name: "db.example.org", Kind: "address", Action: Create, Unknown: true}).String(); got != "dns db.example.org: "+KnownAfterApply {
		t.Errorf("an unknown address shows as %q", got)
	}
}
