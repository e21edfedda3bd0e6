package spec_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"slipway.dev/slipway/internal/spec"
)

// A top-level key starting with x- is the file's own, as in Compose: it holds a block that
// nodes merge with <<:, and is neither a field nor a node.
func TestExtensionKeys(t *testing.T) {
	g, errs := errorLines(t, doc(
		"group: demo",
		"x-base: &base",
		"  image: {rootfs: nodes/web/rootfs}",
		"  firewall: {served: [80, 443], published: [443]}",
		"x-note: any value at all, [not, checked]",
		"x-list: [1, {a: b}]",
		"x-empty:",
		"nodes:",
		"  web:",
		"    <<: *base",
		"  api:",
		"    <<: *base",
		"    rolloutTimeout: 3m",
	), root)
	if errs != nil {
		t.Fatalf("errors: %v", errs)
	}
	var names []string
	for _, n := range g.Nodes {
		names = append(names, n.Name)
	}
	if diff := cmp.Diff([]string{"api", "web"}, names); diff != "" {
		t.Errorf("nodes (-want +got):\n%s", diff)
	}
	for _, name := range names {
		n := g.Node(name)
		if diff := cmp.Diff([]spec.Port{{Protocol: spec.TCP, Number: 443}}, n.Firewall.Published); diff != "" {
			t.Errorf("%s: published from x-base (-want +got):\n%s", name, diff)
		}
		if n.Image.Rootfs != g.Node("web").Image.Rootfs || n.Image.Rootfs == "" {
			t.Errorf("%s: rootfs %q, want x-base's", name, n.Image.Rootfs)
		}
	}
	if got := g.Node("api").RolloutTimeout.String(); got != "3m0s" {
		t.Errorf("api rolloutTimeout = %s, want its own 3m0s", got)
	}
}

func TestExtensionKeyErrors(t *testing.T) {
	tests := []struct {
		name, file string
		want       []string
	}{
		{"x- only at the top", doc(
			"group: demo",
			"nodes:",
			"  web:",
			"    image: {rootfs: nodes/web/rootfs}",
			"    x-note: hi",
		), []string{`slipway.yaml:5: nodes.web.x-note: unknown field "x-note"`}},
		{"X- is not x-", doc(
			"group: demo",
			"X-base: {}",
			"nodes:",
			"  web:",
			"    image: {rootfs: nodes/web/rootfs}",
		), []string{`slipway.yaml:2: X-base: unknown field "X-base"`}},
		{"a merged block is checked where it is merged", doc(
			"group: demo",
			"x-base: &base",
			"  image: {rootfs: nodes/web/rootfs}",
			"  colour: red",
			"nodes:",
			"  web:",
			"    <<: *base",
		), []string{`slipway.yaml:4: nodes.web.colour: unknown field "colour"`}},
		{"x- is not a node", doc(
			"group: demo",
			"x-web:",
			"  image: {rootfs: nodes/web/rootfs}",
		), []string{`slipway.yaml:1: nodes: is required`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, got := errorLines(t, tt.file, root)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}
