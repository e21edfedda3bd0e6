package devcluster

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// The cluster's tools keep the cache key they had before the publishing tools came: their
// binaries (36 minutes of building on 2 busy cores) are reused. A deliberate bump of one of
// their pins changes the key, and this want with it.
func TestCacheKeyOfTheClusterTools(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", "/cache")
	got, err := CacheDir()
	if err != nil {
		t.Fatal(err)
	}
	if want := "/cache/slipway/dev/v1.37.2-75875a0d9b1f"; got != want {
		t.Errorf("CacheDir() = %s, want %s", got, want)
	}
}

// Each tool of its own has a directory of its own, apart from the cluster's and the others'.
func TestOwnToolsCachedApart(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", "/cache")
	shared, err := CacheDir()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]string{shared: "the cluster's tools"}
	for _, tl := range tools {
		if !tl.own {
			continue
		}
		dir, err := toolCacheDir(tl)
		if err != nil {
			t.Fatal(err)
		}
		if !regexp.MustCompile(`^/cache/slipway/dev/` + regexp.QuoteMeta(tl.module) + `-[0-9a-f]{12}$`).MatchString(dir) {
			t.Errorf("cache of %s = %s, want /cache/slipway/dev/%s-<pins>", tl.module, dir, tl.module)
		}
		if other, ok := seen[dir]; ok && other != tl.module { // one module's tools share it (spire)
			t.Errorf("cache of %s = %s, the same as %s's", tl.module, dir, other)
		}
		seen[dir] = tl.module
	}
}

// The Gateway API CRDs the dev cluster installs come from the Envoy Gateway tool module, which
// must pin the same gateway-api version as slipway's own go.mod (the address lane's client).
func TestGatewayAPIVersionMatchesMainModule(t *testing.T) {
	re := regexp.MustCompile(`(?m)^\s*sigs\.k8s\.io/gateway-api (v\S+)`)
	version := func(path string) string {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		m := re.FindSubmatch(b)
		if m == nil {
			t.Fatalf("%s does not require sigs.k8s.io/gateway-api", path)
		}
		return string(m[1])
	}
	main := version(filepath.Join("..", "..", "go.mod"))
	tool := version(filepath.Join("..", "..", "tools", "envoy-gateway", "go.mod"))
	if main != GatewayAPIVersion || tool != GatewayAPIVersion {
		t.Errorf("gateway-api: go.mod %s, tools/envoy-gateway %s, GatewayAPIVersion %s; want all the same", main, tool, GatewayAPIVersion)
	}
}

// The embedded registry main is the one under tools/ (pins/gen.sh copies it).
func TestRegistryLeanMainIsTheToolsCopy(t *testing.T) {
	want, err := os.ReadFile("../../tools/registry/lean/main.go")
	if err != nil {
		t.Fatal(err)
	}
	if string(want) != string(registryLeanMain) {
		t.Errorf("pins/registry-lean.go.txt differs from tools/registry/lean/main.go: run go generate ./internal/devcluster")
	}
}
