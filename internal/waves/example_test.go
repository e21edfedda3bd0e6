package waves_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"slipway.dev/slipway/internal/spec"
	"slipway.dev/slipway/internal/waves"
)

// TestExample: examples/waves loads, its group files load, each target has nodes, and it is
// the example issue 38 asks for: a platform, a config group on it, two apps on the config.
func TestExample(t *testing.T) {
	f, err := waves.Load("../../examples/waves/waves.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, g := range f.Order() {
		order = append(order, g.Name)
		grp, err := spec.Load(g.File)
		if err != nil {
			t.Fatalf("group %s: %v", g.Name, err)
		}
		if _, err := grp.ForTarget(g.Target); err != nil {
			t.Errorf("group %s: %v", g.Name, err)
		}
	}
	if d := cmp.Diff([]string{"platform", "config", "shop-front", "shop-data", "blog"}, order); d != "" {
		t.Errorf("order (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"shop-front", "shop-data", "blog"}, f.Downstream("config")); d != "" {
		t.Errorf("downstream of config (-want +got):\n%s", d)
	}
}
