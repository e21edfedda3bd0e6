package spec_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"slipway.dev/slipway/internal/spec"
)

func TestAppInvalid(t *testing.T) {
	tests := []struct {
		name string
		file string
		want []string
	}{
		{"not a label", doc(
			"group: demo",
			"nodes:",
			"  web:",
			"    app: Front_End",
			"    image: {rootfs: nodes/web/rootfs}",
		), []string{`slipway.yaml:4: nodes.web.app: "Front_End" is not a DNS label (lowercase letters, digits and '-', starting and ending with a letter or digit, at most 63 characters)`}},
		{"all", doc(
			"group: demo",
			"nodes:",
			"  web:",
			"    app: all",
			"    image: {rootfs: nodes/web/rootfs}",
		), []string{`slipway.yaml:4: nodes.web.app: "all" is the target of every node, not an app's name`}},
		{"not a string", doc(
			"group: demo",
			"nodes:",
			"  web:",
			"    app: [a]",
			"    image: {rootfs: nodes/web/rootfs}",
		), []string{`slipway.yaml:4: nodes.web.app: must be a string, not a list`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { checkErrors(t, tt.file, tt.want) })
	}
}

func TestForTarget(t *testing.T) {
	g, err := spec.Parse("slipway.yaml", []byte(doc(
		"group: demo",
		"defaults:",
		"  app: site",
		"nodes:",
		"  web: {image: {rootfs: nodes/web/rootfs}}",
		"  proxy: {image: {rootfs: nodes/web/rootfs}}",
		"  db: {app: data, image: {rootfs: nodes/web/rootfs}}",
	)), root)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"data", "site"}, g.Apps()); d != "" {
		t.Errorf("apps (-want +got):\n%s", d)
	}
	for target, want := range map[string][]string{"all": {"db", "proxy", "web"}, "": {"db", "proxy", "web"}, "site": {"proxy", "web"}, "data": {"db"}} {
		tg, err := g.ForTarget(target)
		if err != nil {
			t.Fatalf("target %q: %v", target, err)
		}
		var got []string
		for _, n := range tg.Nodes {
			got = append(got, n.Name)
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("target %q: nodes (-want +got):\n%s", target, d)
		}
	}
	if len(g.Nodes) != 3 {
		t.Errorf("ForTarget changed the group: %d nodes", len(g.Nodes))
	}
	_, err = g.ForTarget("web")
	want := `target "web": no node of group demo (slipway.yaml) has app "web"; targets: all, data, site`
	if err == nil || err.Error() != want {
		t.Errorf("error %v, want %s", err, want)
	}
}
