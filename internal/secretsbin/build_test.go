package secretsbin

import (
	"bytes"
	"context"
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestOnDemandBuild: a slipway without programs built in (this test's binary is built from
// the source, without -trimpath) builds them from its module: static Linux programs for both
// platforms, cached under the user's cache directory and read from there the second time,
// the same bytes as another build of the same source (what go generate embeds), holding no
// path of this machine.
func TestOnDemandBuild(t *testing.T) {
	// Go's build cache stays where it is (it defaults to XDG_CACHE_HOME too): the cache under
	// test is slipway's, and a cold Go cache would cost minutes.
	gocache, err := exec.Command("go", "env", "GOCACHE").Output()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("GOCACHE", strings.TrimSpace(string(gocache)))
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	src, err := sourceDir()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	b, err := newBuilder(ctx, src)
	if err != nil {
		t.Fatal(err)
	}
	var progress bytes.Buffer
	got, err := b.programs(ctx, &progress)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("progress:\n%s", progress.String())
	if !strings.Contains(progress.String(), "slipway: building the secrets sidecar from "+src) {
		t.Errorf("the first call does not say it builds:\n%s", progress.String())
	}
	machines := map[string]elf.Machine{"linux/amd64": elf.EM_X86_64, "linux/arm64": elf.EM_AARCH64}
	for _, p := range Platforms {
		f, err := elf.NewFile(bytes.NewReader(got[p]))
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if f.Machine != machines[p] || f.Section(".interp") != nil {
			t.Errorf("%s: machine %v, dynamic %v; want %v, static", p, f.Machine, f.Section(".interp") != nil, machines[p])
		}
		if bytes.Contains(got[p], []byte(src)) {
			t.Errorf("%s: the program holds the source's path %s", p, src)
		}
	}
	progress.Reset()
	again, err := b.programs(ctx, &progress)
	if err != nil || progress.Len() != 0 {
		t.Errorf("second call: error %v, progress %q; want the cache, silently", err, progress.String())
	}
	// go generate gives a directory relative to the package's, not to the module's root.
	t.Chdir(t.TempDir())
	if err := Generate(ctx, src, "bin"); err != nil {
		t.Fatal(err)
	}
	other, _ := filepath.Abs("bin")
	for _, p := range Platforms {
		gen, _ := os.ReadFile(filepath.Join(other, fileOf(p)))
		if !bytes.Equal(gen, got[p]) || !bytes.Equal(again[p], got[p]) {
			t.Errorf("%s: builds of the same source differ (%d, %d, %d bytes): not reproducible", p, len(got[p]), len(again[p]), len(gen))
		}
	}
	if key, _ := os.ReadFile(filepath.Join(other, keyFile)); strings.TrimSpace(string(key)) != b.key {
		t.Errorf("go generate's key %q, want %q", key, b.key)
	}
}

// TestSourceKey: the key follows the files of the sidecar's packages (and go.mod, go.sum, the
// Go version), not the module's other packages nor tests.
func TestSourceKey(t *testing.T) {
	dir := t.TempDir()
	write := func(rel, content string) {
		t.Helper()
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module slipway.dev/slipway\n\ngo 1.26.0\n")
	write("go.sum", "")
	write("cmd/slipway-secrets/main.go", "package main\n\nimport _ \"slipway.dev/slipway/internal/a\"\n\nfunc main() {}\n")
	write("internal/a/a.go", "package a\n\nimport _ \"slipway.dev/slipway/internal/b\"\n")
	write("internal/b/b.go", "package b\n")
	write("internal/c/c.go", "package c\n")
	if !isModuleRoot(dir) {
		t.Fatal("the fixture is not a module root")
	}
	key := func() string {
		k, err := sourceKey(dir, "go1.26.8")
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	base := key()
	for _, tc := range []struct {
		name, file, content string
		changes             bool
	}{
		{"another package", "internal/c/c.go", "package c\n\nvar X = 1\n", false},
		{"a test of the sidecar's package", "internal/a/a_test.go", "package a\n", false},
		{"a package imported through another", "internal/b/b.go", "package b\n\nvar Y = 2\n", true},
		{"a new file of an imported package", "internal/a/extra.go", "package a\n", true},
		{"go.sum", "go.sum", "example.com/m v1.0.0 h1:x=\n", true},
	} {
		write(tc.file, tc.content)
		k := key()
		if (k != base) != tc.changes {
			t.Errorf("%s: key changed %v, want %v", tc.name, k != base, tc.changes)
		}
		base = k
	}
	if k, _ := sourceKey(dir, "go1.27.0"); k == base {
		t.Error("another Go version gives the same key")
	}
}

// TestNotAModule: a directory without slipway's go.mod is no source to build from.
func TestNotAModule(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module example.com/other\n"), 0o644)
	if isModuleRoot(dir) {
		t.Error("another module taken for slipway's")
	}
}
