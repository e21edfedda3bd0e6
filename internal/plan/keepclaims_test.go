package plan

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestKeepClaims: apply --keep-claims drops the claim deletes of removed nodes only (a node
// still in the group keeps a replaced claim's change), and a protected claim so kept no longer
// refuses the plan.
func TestKeepClaims(t *testing.T) {
	claim := func(n string) Key { return Key{Kind: "PersistentVolumeClaim", Namespace: "ns", Name: n} }
	dep := func(n string) Key { return Key{Kind: "Deployment", Namespace: "ns", Name: n} }
	p := &Plan{Nodes: []NodePlan{
		{Node: "moved", Removed: true, Changes: []Change{{Key: dep("moved"), Action: Delete}, {Key: claim("moved"), Action: Delete, Destructive: true}}},
		{Node: "leftover", Removed: true, Changes: []Change{{Key: claim("leftover"), Action: Delete, Destructive: true}}},
		{Node: "stays", Changes: []Change{{Key: claim("stays"), Action: Replace, Destructive: true}}},
	}}
	if err := Protect(p, map[string]bool{"moved": true}); err == nil {
		t.Fatal("a protected claim's delete was not refused before KeepClaims")
	}
	KeepClaims(p)
	want := []NodePlan{
		{Node: "moved", Removed: true, Changes: []Change{{Key: dep("moved"), Action: Delete}}, KeptClaims: []Key{claim("moved")}},
		{Node: "leftover", Removed: true, KeptClaims: []Key{claim("leftover")}},
		{Node: "stays", Changes: []Change{{Key: claim("stays"), Action: Replace, Destructive: true}}},
	}
	if d := cmp.Diff(want, p.Nodes); d != "" {
		t.Errorf("nodes (-want +got):\n%s", d)
	}
	if err := Protect(p, map[string]bool{"moved": true, "leftover": true}); err != nil {
		t.Errorf("a kept claim refused: %v", err)
	}
	if !p.Kept("moved") || !p.Kept("leftover") || p.Kept("stays") {
		t.Errorf("Kept: moved %v, leftover %v, stays %v", p.Kept("moved"), p.Kept("leftover"), p.Kept("stays"))
	}
	if got := p.Counts().Delete; got != 1 {
		t.Errorf("deletes counted: %d, want 1 (the kept claims are none)", got)
	}
}
