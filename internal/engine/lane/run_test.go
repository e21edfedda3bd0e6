package lane

import (
	"testing"

	"slipway.dev/slipway/internal/state"
)

// TestSlots: a key's slot holds what was set in it, the zero value before; two keys of one
// type never share a slot.
func TestSlots(t *testing.T) {
	a, b := NewKey[[]string]("a"), NewKey[[]string]("b")
	flag := NewKey[bool]("flag")
	var s Slots
	if got := Get(&s, a); got != nil {
		t.Errorf("unset slot a = %v, want nil", got)
	}
	Set(&s, a, []string{"192.0.2.7"})
	Set(&s, flag, true)
	for _, tc := range []struct {
		name string
		got  any
		want any
	}{
		{"a", len(Get(&s, a)), 1},
		{"b, of a's type, unset", len(Get(&s, b)), 0},
		{"flag", Get(&s, flag), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.got != tc.want {
				t.Errorf("%s = %v, want %v", tc.name, tc.got, tc.want)
			}
		})
	}
	Set(&s, a, nil)
	if got := Get(&s, a); got != nil {
		t.Errorf("slot a after setting nil = %v, want nil", got)
	}
}

// TestNodeOf: a node's entry is made when the document has none, and found after.
func TestNodeOf(t *testing.T) {
	d := &state.Document{}
	ns := NodeOf(d, "web")
	ns.MachineID = "m"
	if got := NodeOf(d, "web"); got != ns || got.MachineID != "m" || len(d.Nodes) != 1 {
		t.Errorf("NodeOf(web) again = %+v, want the entry made first (%d entries)", got, len(d.Nodes))
	}
}
