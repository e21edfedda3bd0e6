package nsmove

import (
	"strings"
	"testing"

	"slipway.dev/slipway/internal/engine/lane"
	"slipway.dev/slipway/internal/spec"
	"slipway.dev/slipway/internal/state"
)

// TestMoveSource: the namespace a plan moves the group from.
func TestMoveSource(t *testing.T) {
	g := &spec.Group{Name: "demo"}
	for _, tc := range []struct {
		name, namespace, movedFrom string
		dns                        bool // the state lists published records
		want, err                  string
	}{
		{name: "published records", namespace: "a", dns: true, err: "node web has published DNS records (web.dev.test): they name namespace a as their owner"},
		{name: "no move", namespace: "b"},
		{name: "moved by this run", namespace: "a", want: "a"},
		{name: "a move not finished", namespace: "b", movedFrom: "a", want: "a"},
		{name: "moved back before the move finished", namespace: "b", movedFrom: "c", want: "c"},
		{name: "back where it came from", namespace: "a", movedFrom: "b", want: "a"},
		{name: "a second move before the first finished", namespace: "c", movedFrom: "a", err: "its move from namespace a to c is not finished"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := &state.Document{Group: "demo", Namespace: tc.namespace, MovedFrom: tc.movedFrom, Nodes: map[string]*state.NodeState{"web": {}}}
			if tc.dns {
				doc.Nodes["web"].DNS = []state.DNSRecord{{Name: "web.dev.test", Kind: "address"}}
			}
			got, err := moveSource(doc, lane.Target{Group: g, Namespace: "b", MoveNamespace: true})
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("moveSource = %q, %v; want an error with %q", got, err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("moveSource = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}
