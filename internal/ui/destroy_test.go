package ui

import (
	"bytes"
	"testing"

	"path/filepath"

	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/testkit"
)

// A plan of `plan -destroy` says so in its title; its notes are lines of their own (the CLI
// writes them to stderr), not part of the plan's text.
func TestDestroyPlanText(t *testing.T) {
	k := func(kind, name string) plan.Key { return plan.Key{Kind: kind, Namespace: "demo", Name: name} }
	p := &plan.Plan{
		Group: "demo", Namespace: "demo", Destroy: true,
		Notes: []string{"destroy deletes the group's state too; the images stay in the registry"},
		Nodes: []plan.NodePlan{
			{Node: "", Changes: []plan.Change{
				{Key: k("NetworkPolicy", "default-deny"), Action: plan.Delete},
				{Key: plan.Key{Kind: "Namespace", Name: "demo"}, Action: plan.Delete, Reason: "with everything in it, objects slipway did not make included"},
			}},
			{Node: "web", Changes: []plan.Change{
				{Key: k("Deployment", "web"), Action: plan.Delete},
				{Key: k("PersistentVolumeClaim", "web-state"), Action: plan.Delete, Destructive: true, Reason: "the node's state on /var/lib is lost"},
			}},
		},
	}
	var b bytes.Buffer
	Plan(&b, p)
	testkit.Golden(t, filepath.Join("testdata", "plan-destroy.txt"), b.Bytes())
	b.Reset()
	PlanNotes(&b, p)
	if want := "note: destroy deletes the group's state too; the images stay in the registry\n"; b.String() != want {
		t.Errorf("notes = %q, want %q", b.String(), want)
	}
}
