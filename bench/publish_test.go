package main

import (
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"slipway.dev/slipway/internal/spec"
)

// The publish mode's group loads, with two names per node in the zone, and without publish:
// it is the same group as the other modes'.
func TestPublishGroup(t *testing.T) {
	t.Setenv(spec.EnvTSIGSecret, "c2VjcmV0") // the loader wants the secret to exist
	t.Setenv(spec.EnvDNSServer, "127.0.0.1:53")
	for _, publish := range []bool{false, true} {
		dir := t.TempDir()
		if err := writePublishGroup(dir, 3, "r", "bench-publish", "z.dev.test", publish); err != nil {
			t.Fatal(err)
		}
		g, err := spec.Load(filepath.Join(dir, "slipway.yaml"))
		if err != nil {
			t.Fatalf("publish %v: %v", publish, err)
		}
		if (g.Publish != nil) != publish || len(g.Nodes) != 3 {
			t.Fatalf("publish %v: publish: %v, %d nodes", publish, g.Publish, len(g.Nodes))
		}
		var want []string
		if publish {
			want = []string{"n001.z.dev.test", "www-n001.z.dev.test"}
		}
		if d := cmp.Diff(want, g.Nodes[1].PublishedNames); d != "" {
			t.Errorf("publish %v: names of n001 (-want +got):\n%s", publish, d)
		}
	}
}
