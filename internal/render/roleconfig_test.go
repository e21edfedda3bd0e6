package render_test

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"

	"slipway.dev/slipway/internal/render"
	"slipway.dev/slipway/internal/spec"
)

// TestRoleConfigRollsOutItsPods: a change of a role's own ConfigMap changes the config hash of
// that role's pods only; a change of the node's changes the pods that read it (the node's, the
// role that takes the node's files, the service role that reads a key of it), not the role
// whose own entry hides the node's.
func TestRoleConfigRollsOutItsPods(t *testing.T) {
	t.Setenv("SLIPWAY_RENDER_TOKEN", "render-fixture-token")
	hashes := func(change func(n *spec.Node)) map[string]string {
		g, err := spec.Load("testdata/workload/role-config.yaml")
		if err != nil {
			t.Fatal(err)
		}
		change(g.Node("web"))
		objs, err := render.Objects(fakeInput(g))
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		for _, name := range []string{"web", "web-plain", "web-own", "web-sso"} {
			d, ok := find[*appsv1.Deployment](objs, "Deployment", name)
			if !ok {
				t.Fatalf("no Deployment %s", name)
			}
			out[name] = d.Spec.Template.Annotations[spec.AnnotationConfigHash]
		}
		return out
	}
	before := hashes(func(*spec.Node) {})
	tests := []struct {
		name    string
		change  func(n *spec.Node)
		changed []string
	}{
		{"the role's own config", func(n *spec.Node) { n.Role("own").Config[0].Data["queue"] = "other\n" }, []string{"web-own"}},
		{"the node's config", func(n *spec.Node) { n.Config[0].Data["app.conf"] = "other\n" }, []string{"web", "web-plain", "web-sso"}},
		{"the service role's own secret", func(n *spec.Node) { n.Role("sso").Secrets[0].Hash = "sha256:other" }, []string{"web-sso"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			after := hashes(tt.change)
			for name, h := range after {
				want := false
				for _, c := range tt.changed {
					want = want || c == name
				}
				if got := h != before[name]; got != want || h == "" {
					t.Errorf("Deployment %s: config hash changed %v, want %v (%q)", name, got, want, h)
				}
			}
		})
	}
}
