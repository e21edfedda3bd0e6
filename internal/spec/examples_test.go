package spec_test

import (
	"os"
	"strings"
	"testing"

	"slipway.dev/slipway/internal/spec"
)

// TestFullExampleSetsEveryField: examples/full writes every field of SPEC §3 and §3a that the
// loader accepts (the publishing lanes' publish: of §7 aside, the spire: of FR-015, which needs
// a SPIRE server, the secrets sidecar's fields, which need a secrets server:
// examples/secrets has them, and central:, which needs PostgreSQL and OpenBao: examples/central), and a base image in slipway's own
// registry, so that it deploys where slipway pushes.
func TestFullExampleSetsEveryField(t *testing.T) {
	const file = "../../examples/full/slipway.yaml"
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range unsetFields(t, data) {
		if f != "publish" && !strings.HasPrefix(f, "publish.") && f != "spire" && !strings.HasPrefix(f, "spire.") && !sidecarField(f) &&
			f != "central" && !strings.HasPrefix(f, "central.") {
			t.Errorf("%s does not set %s", file, f)
		}
	}
	if !strings.Contains(string(data), "base: "+spec.RegistryPrefix) {
		t.Errorf("%s: the proxy's base image is not in slipway's registry (%s…)", file, spec.RegistryPrefix)
	}
}

// sidecarField reports whether f is a field of the secrets sidecar (FR-004e, FR-004g).
func sidecarField(f string) bool {
	for _, p := range []string{"nodes.<node>.secretsFrom", "nodes.<node>.roles.<role>.sidecarSecrets", "nodes.<node>.roles.<role>.companion"} {
		if f == p || strings.HasPrefix(f, p+".") {
			return true
		}
	}
	return false
}
