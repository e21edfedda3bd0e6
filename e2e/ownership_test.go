package e2e

import (
	"path/filepath"
	"strings"
	"testing"
)

// tinyGroup is the group of issue 11: one node solo, ready on tcp 8080, published.
const tinyGroup = `group: {{GROUP}}
nodes:
  solo:
    image: {rootfs: nodes/solo/rootfs}
    init: none
    readiness: {tcp: 8080}
    firewall: {served: [8080], published: [8080]}
`

// TestForeignStateDocument (issue 11 item 6): plan, status and apply of group beta pointed at
// group alpha's state refuse at once, naming both groups, and change nothing.
func TestForeignStateDocument(t *testing.T) {
	t.Parallel()
	alpha := NewGroup(t, "alpha", tinyGroup, "solo")
	alpha.MustRun(0, "apply", "--yes")
	alphaState := filepath.Join(alpha.Dir, ".slipway", "state", alpha.Name+".json")
	before := alpha.State().State

	beta := NewGroup(t, "beta", tinyGroup, "solo").WithEnv("SLIPWAY_STATE=file://" + alphaState)
	for _, verb := range [][]string{{"plan"}, {"status"}, {"apply", "--yes"}} {
		t.Run(verb[0], func(t *testing.T) {
			r := beta.MustRun(1, verb...)
			if !strings.Contains(r.Stderr, "group "+alpha.Name) || !strings.Contains(r.Stderr, "group "+beta.Name) {
				t.Errorf("want an error naming groups %s and %s, got %s", alpha.Name, beta.Name, r)
			}
		})
	}
	if beta.NamespaceExists() {
		t.Errorf("namespace %s was created by an apply that read another group's state", beta.Name)
	}
	if tags := beta.RepoTags("solo"); tags != nil {
		t.Errorf("images of %s were pushed: %v", beta.Name, tags)
	}
	if after := alpha.State().State; after.Serial != before.Serial {
		t.Errorf("alpha's state moved from serial %d to %d", before.Serial, after.Serial)
	}
}
