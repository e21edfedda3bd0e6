package ui

import (
	"bytes"
	"path/filepath"
	"testing"
	"time"

	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/spec"
	"slipway.dev/slipway/internal/testkit"
)

// lanesPlan has a change of every lane: a node's DNS records (a conflict and an adoption
// among them), its state migration and a copy to remove, the namespace move, SPIRE and
// central; a hostile value in each lane's text.
func lanesPlan() *plan.Plan {
	k := func(kind, name string) plan.Key { return plan.Key{Kind: kind, Namespace: "demo", Name: name} }
	p := &plan.Plan{
		Group: "demo", Namespace: "demo", Version: plan.FormatVersion, StateSerial: 3,
		Created: time.Date(2026, 12, 6, 10, 4, 5, 0, time.UTC),
		Nodes: []plan.NodePlan{
			{Node: "db", Changes: []plan.Change{{Key: k("Deployment", "db"), Action: plan.Update,
				Diff: []plan.FieldDiff{{Path: "spec.template.spec.initContainers[0].env[0].value", Old: "1", New: "2\x1b[2K"}}}},
				Migration: &plan.Migration{From: "1", To: "2\x1b[2K"}},
			{Node: "mx", RemoveCopy: &plan.Copy{From: "", To: "1"}, Records: []plan.RecordChange{
				{Name: "example.org", Kind: "mx", Action: plan.Create, Unknown: true},
				{Name: "example.org", Kind: "spf", Action: plan.Update, Old: []string{"TXT v=spf1 -all"}, New: []string{"TXT v=spf1 mx -all"}},
			}},
			{Node: "web", Records: []plan.RecordChange{
				{Name: "web.example.org", Kind: "address", Action: plan.Create, New: []string{"A 192.0.2.1"}},
				{Name: "old.example.org", Kind: "address", Action: plan.Delete, Old: []string{"A 192.0.2.9"}},
				{Name: "www.example.org", Kind: "address", Action: plan.Conflict, Reason: "held by TXT \x1b[1A owner=<else>&co"},
				{Name: "api.example.org", Kind: "address", Action: plan.Update, Old: []string{"A 192.0.2.3"}, New: []string{"A 192.0.2.3"},
					Adopted: "demo", Owner: "demo.all"},
			}},
		},
		Move:  &plan.Move{From: "old", Delete: []plan.Change{{Key: plan.Key{Kind: "Service", Namespace: "old", Name: "web"}, Action: plan.Delete}}},
		Spire: []plan.SpireChange{{What: plan.SpireAllow, Name: "demo:node-web", Action: plan.Create, Cluster: "uid-demo"}},
		Central: []plan.CentralChange{
			{What: plan.CentralLogin, Key: "app", Name: "demo.app", Action: plan.Create},
			{What: plan.CentralKV, Key: "old", Name: "secret/slipway/demo/<old>&", Action: plan.Delete},
		},
	}
	g := &spec.Group{Name: "demo", Nodes: []*spec.Node{{Name: "db"}, {Name: "mx"}, {Name: "web"}}}
	p.Steps = plan.BuildSteps(p, g, func(*spec.Node) time.Duration { return time.Minute })
	return p
}

// TestPlanLanes: every lane's rows, sections, counts and JSON, as the goldens hold them (they
// were written before ui stopped naming the lanes, and must not change).
func TestPlanLanes(t *testing.T) {
	for _, tt := range []struct {
		golden string
		print  func(t *testing.T, w *bytes.Buffer)
	}{
		{"plan-lanes.txt", func(t *testing.T, w *bytes.Buffer) { PlanWith(w, lanesPlan(), PlanOptions{}) }},
		{"plan-lanes-color.txt", func(t *testing.T, w *bytes.Buffer) { PlanWith(w, lanesPlan(), PlanOptions{Color: true}) }},
		{"plan-lanes.json", func(t *testing.T, w *bytes.Buffer) {
			if err := PlanJSON(w, lanesPlan()); err != nil {
				t.Fatal(err)
			}
		}},
		{"plan-lanes-none.json", func(t *testing.T, w *bytes.Buffer) {
			if err := PlanJSON(w, &plan.Plan{Group: "demo", Namespace: "demo"}); err != nil {
				t.Fatal(err)
			}
		}},
		{"applied-lanes.txt", func(t *testing.T, w *bytes.Buffer) {
			if err := Applied(w, lanesPlan()); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tt.golden, func(t *testing.T) {
			var b bytes.Buffer
			tt.print(t, &b)
			testkit.Golden(t, filepath.Join("testdata", tt.golden), b.Bytes())
		})
	}
}
