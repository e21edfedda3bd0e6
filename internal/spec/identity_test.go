package spec_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"slipway.dev/slipway/internal/spec"
)

// TestIdentityKey: each deployment's key, and the ones issue 46 found colliding when names were
// joined with '-' (a target and a group of the joined name; a deployment id and none).
func TestIdentityKey(t *testing.T) {
	long := strings.Repeat("a", 30)
	tests := []struct {
		id   spec.Identity
		want string
	}{
		{spec.Identity{Group: "shop"}, "shop"},
		{spec.Identity{Group: "shop", Target: "all"}, "shop"},
		{spec.Identity{Group: "shop", Target: "front"}, "shop.front"},
		{spec.Identity{Group: "shop", Target: "front", ID: "x7"}, "shop.front.x7"},
		{spec.Identity{Group: "shop", ID: "x7"}, "shop.all.x7"},
		{spec.Identity{Group: "shop", Target: "all", ID: "x7"}, "shop.all.x7"},
		{spec.Identity{Group: "shop-front"}, "shop-front"},
		{spec.Identity{Group: long, Target: long, ID: "x"}, long + "." + long + ".x"},
		{spec.Identity{Group: long, Target: long, ID: "xy"}, "hashed.h"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			got := tt.id.Key()
			if strings.HasSuffix(tt.want, ".h") {
				// The hash itself is not the point: its shape is.
				parts := strings.Split(got, ".")
				if len(parts) != 4 || parts[0] != strings.Repeat("a", 16) || len(parts[1]) != 20 || len(parts[2]) != 20 || parts[3] != "h" {
					t.Fatalf("key %q: want <group prefix>.<20 hex>.<20 hex>.h", got)
				}
			} else if got != tt.want {
				t.Errorf("key %q, want %q", got, tt.want)
			}
			if len(got) > 63 {
				t.Errorf("key %q: %d characters, more than a label value holds", got, len(got))
			}
			if !spec.IsSubdomain("slipway-state-" + got) {
				t.Errorf("slipway-state-%s is not an object name", got)
			}
		})
	}
}

// TestIdentityKeysDiffer: no two deployments of a set whose '-'-joined names collide share a
// key, hashed or not, and a hashed key never equals a real one.
func TestIdentityKeysDiffer(t *testing.T) {
	long := strings.Repeat("b", 40)
	ids := []spec.Identity{
		{Group: "shop"}, {Group: "shop-front"}, {Group: "shop", Target: "front"},
		{Group: "shop", Target: "front", ID: "x7"}, {Group: "shop-front", ID: "x7"},
		{Group: "shop", ID: "front-x7"}, {Group: "shop", Target: "front-x7"},
		{Group: "shop", ID: "x7"}, {Group: "shop-all", ID: "x7"}, {Group: "shop", Target: "all-x7"},
		{Group: long, Target: long}, {Group: long, Target: long, ID: "a"}, {Group: long, ID: long},
		{Group: long + "-" + long[:20]}, {Group: long, Target: long[:20] + "-" + long},
	}
	seen := map[string]spec.Identity{}
	for _, id := range ids {
		k := id.Key()
		if other, ok := seen[k]; ok {
			t.Errorf("%v and %v share the key %q", other, id, k)
		}
		seen[k] = id
		if parsed, ok := spec.ParseKey(k); ok && parsed.Key() != k {
			t.Errorf("key %q parses to %v, whose key is %q", k, parsed, parsed.Key())
		}
	}
}

// TestParseKey reads a key back into its parts; a hashed key and a non-key do not parse.
func TestParseKey(t *testing.T) {
	for key, want := range map[string]*spec.Identity{
		"shop":          {Group: "shop"},
		"shop.front":    {Group: "shop", Target: "front"},
		"shop.all.x7":   {Group: "shop", ID: "x7"},
		"shop.front.x7": {Group: "shop", Target: "front", ID: "x7"},
		"shop.all":      nil,
		"a.b.c.h":       nil,
		"Shop":          nil,
		"shop..x":       nil,
	} {
		got, ok := spec.ParseKey(key)
		if want == nil {
			if ok {
				t.Errorf("ParseKey(%q) = %v, want no key", key, got)
			}
			continue
		}
		if d := cmp.Diff(*want, got); !ok || d != "" {
			t.Errorf("ParseKey(%q) ok %v (-want +got):\n%s", key, ok, d)
		}
	}
}

// TestForDeployment: a per-app target and a deployment id make the group whose Name is the
// deployment's key, keeping the parts; a bad id or target is refused before a key is made.
func TestForDeployment(t *testing.T) {
	g, err := spec.Parse("slipway.yaml", []byte(doc(
		"group: shop",
		"nodes:",
		"  web: {app: front, image: {rootfs: nodes/web/rootfs}}",
		"  db: {image: {rootfs: nodes/web/rootfs}}",
	)), root)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ target, id, name string }{
		{"all", "", "shop"}, {"", "", "shop"}, {"front", "", "shop.front"},
		{"front", "x7", "shop.front.x7"}, {"all", "x7", "shop.all.x7"},
	} {
		tg, err := g.ForDeployment(tt.target, tt.id)
		if err != nil {
			t.Fatalf("%s/%s: %v", tt.target, tt.id, err)
		}
		if tg.Name != tt.name {
			t.Errorf("%s/%s: name %q, want %q", tt.target, tt.id, tg.Name, tt.name)
		}
		if id := tg.Ident(); id.Group != "shop" || id.ID != tt.id || id.Key() != tt.name {
			t.Errorf("%s/%s: identity %+v", tt.target, tt.id, id)
		}
	}
	if g.Name != "shop" || g.Ident().Key() != "shop" {
		t.Errorf("ForDeployment changed the group: %s", g.Name)
	}
	for _, tt := range []struct{ target, id, want string }{
		{"front", "X7", `deployment id "X7" (from the deployment id) is not a DNS label`},
		{"front.x7", "", `target "front.x7": not a DNS label`},
		{"all", "a.b", `deployment id "a.b"`},
	} {
		_, err := g.ForDeployment(tt.target, tt.id)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s/%s: error %v, want %s", tt.target, tt.id, err, tt.want)
		}
	}
}
