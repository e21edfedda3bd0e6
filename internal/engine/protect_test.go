package engine

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"slipway.dev/slipway/internal/spec"
	"slipway.dev/slipway/internal/state"
)

// TestProtectedNodes: a node of the file is protected as the file says (so an apply without
// protect lifts it), a node that left the file as the state last recorded it.
func TestProtectedNodes(t *testing.T) {
	g := &spec.Group{Name: "demo", Nodes: []*spec.Node{
		{Name: "web", State: spec.StateVolume{Protect: true}},
		{Name: "db"},
	}}
	tests := []struct {
		name string
		doc  *state.Document
		want map[string]bool
	}{
		{"no state", nil, map[string]bool{"web": true}},
		{"the file wins over the state", &state.Document{Nodes: map[string]*state.NodeState{
			"web": {}, "db": {Protect: true}}}, map[string]bool{"web": true}},
		{"a removed node keeps the state's", &state.Document{Nodes: map[string]*state.NodeState{
			"old": {Protect: true}, "gone": {}}}, map[string]bool{"web": true, "old": true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if d := cmp.Diff(tc.want, protectedNodes(g, tc.doc)); d != "" {
				t.Errorf("protectedNodes (-want +got):\n%s", d)
			}
		})
	}
}
