package ui

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/spec"
)

// TestPlanMigration: plan names a node's state migration, what happens to its volume, and a
// copy left to remove; the summary counts them.
func TestPlanMigration(t *testing.T) {
	dep := plan.Key{Kind: "Deployment", Namespace: "demo", Name: "db"}
	p := &plan.Plan{Group: "demo", Namespace: "demo", Nodes: []plan.NodePlan{
		{Node: "db", Changes: []plan.Change{{Key: dep, Action: plan.Update,
			Diff: []plan.FieldDiff{{Path: "spec.template.spec.initContainers[0].env[0].value", Old: "1", New: "2"}}}},
			Migration: &plan.Migration{From: "1", To: "2"}},
		{Node: "web", RemoveCopy: &plan.Copy{From: "", To: "1"}},
	}}
	g := &spec.Group{Name: "demo", Nodes: []*spec.Node{{Name: "db"}, {Name: "web"}}}
	p.Steps = plan.BuildSteps(p, g, func(*spec.Node) time.Duration { return time.Minute })
	var b bytes.Buffer
	Plan(&b, p)
	for _, want := range []string{
		"    ~   migrate  state version 1 -> 2\n",
		"the new pod copies /var/lib to /var/lib/.slipway-state/copy on its volume before the node starts",
		"the state keeps version 1; if it succeeds, the copy is removed",
		"update Deployment db (state migration 1 -> 2: its init container slipway-state copies /var/lib on the volume before the node starts)",
		"on failure roll back to the last template that ran ready, which puts the copy of /var/lib back first; the state keeps version 1",
		"remove the copy of /var/lib from the volume (Job db-state on the pod's host; the data stays at state version 2; limit 1m0s)",
		"    -   remove   copy of /var/lib taken at state version none (its migration to 1 ran ready)\n",
		"remove the copy of /var/lib from the volume (Job web-state on the pod's host; the data stays at state version 1; limit 1m0s)",
		"; 1 state migration(s); 1 cop(ies) of /var/lib to remove.\n",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("plan lacks %q:\n%s", want, b.String())
		}
	}
}
