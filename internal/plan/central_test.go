package plan

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestCentralSteps: the lane's adds and changes run before every node, its removals after.
func TestCentralSteps(t *testing.T) {
	p := &Plan{Central: []CentralChange{
		{What: CentralLogin, Name: "shop.a", Action: Create},
		{What: CentralDatabase, Name: "shop.old", Action: Delete},
		{What: CentralKV, Name: "secret/slipway/shop/k", Action: Update},
	}}
	before, after := centralSteps(p)
	if len(before) != 1 || len(after) != 1 {
		t.Fatalf("steps before %d, after %d", len(before), len(after))
	}
	if d := cmp.Diff([]CentralChange{p.Central[0], p.Central[2]}, []CentralChange(before[0].Payload.(CentralChanges))); d != "" {
		t.Errorf("before (-want +got):\n%s", d)
	}
	if got, want := before[0].String(), "make the central services' objects before any node (1 login, 1 kv)"; got != want {
		t.Errorf("text %q, want %q", got, want)
	}
	if got, want := after[0].String(), "remove from the central services what the file no longer has (1 database)"; got != want {
		t.Errorf("text %q, want %q", got, want)
	}
	if !p.HasChanges() || p.Totals().N("central") != 3 {
		t.Errorf("totals %+v", p.Totals())
	}
}
