package devcluster

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestBuildProgress(t *testing.T) {
	start := time.Date(2026, 12, 1, 0, 30, 0, 0, time.UTC)
	todo := map[string]bool{"runtime": true, "k8s.io/api/core/v1": true, "k8s.io/kubernetes/cmd/kubectl": true, "example.com/x": true}
	tests := []struct {
		name  string
		lines []string
		want  string
	}{
		{"nothing yet", nil, "kube: 0 of 4 packages (0%), 1m30s"},
		{"downloads are not packages", []string{"go: downloading k8s.io/api v0.37.2", "go: downloading example.com/x v1.0.0"}, "kube: 0 of 4 packages (0%), 1m30s"},
		{"compiled ones count once", []string{"runtime", "k8s.io/api/core/v1", "runtime"}, "kube: 2 of 4 packages (50%), 1m30s"},
		{"a package not listed is not counted", []string{"runtime", "k8s.io/other"}, "kube: 1 of 4 packages (25%), 1m30s"},
		{"all", []string{"runtime", "k8s.io/api/core/v1", "k8s.io/kubernetes/cmd/kubectl", "example.com/x"}, "kube: 4 of 4 packages (100%), 1m30s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			todoCopy := map[string]bool{}
			for k := range todo {
				todoCopy[k] = true
			}
			p := newBuildProgress("kube", todoCopy, start)
			scanBuild(strings.NewReader(strings.Join(tt.lines, "\n")), p, newTail(5))
			if d := cmp.Diff(tt.want, p.String(start.Add(90*time.Second))); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}

// TestStalePackages lists what a build of a small module compiles: its own packages, which no
// cache holds yet, and not the standard library packages the cache already has.
func TestStalePackages(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(rel, content string) {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// A unique constant, so that no earlier run left these packages in the build cache.
	unique := time.Now().Format(time.RFC3339Nano)
	write("go.mod", "module example.com/m\n\ngo 1.26\n")
	write("lib/lib.go", "package lib\n\nconst Stamp = \""+unique+"\"\n")
	write("cmd/m/main.go", "package main\n\nimport (\n\t\"fmt\"\n\n\t\"example.com/m/lib\"\n)\n\nfunc main() { fmt.Println(lib.Stamp) }\n")
	env := append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod", "CGO_ENABLED=0")
	// Warm the cache for the standard library this module uses.
	warm := exec.Command(goBin, "build", "-trimpath", "fmt")
	warm.Dir, warm.Env = dir, env
	if out, err := warm.CombinedOutput(); err != nil {
		t.Fatalf("go build fmt: %v\n%s", err, out)
	}
	got, err := stalePackages(t.Context(), goBin, dir, env, []string{"example.com/m/cmd/m"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"example.com/m/lib": true, "example.com/m/cmd/m": true}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("stale packages (-want +got):\n%s", d)
	}

	// The build then reports each of them compiled: the share reaches 100%.
	start := time.Now()
	p := newBuildProgress("m", got, start)
	build := exec.Command(goBin, "build", "-v", "-trimpath", "-o", filepath.Join(t.TempDir(), "m"), "example.com/m/cmd/m")
	build.Dir, build.Env = dir, env
	out, err := build.CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	scanBuild(bytes.NewReader(out), p, newTail(5))
	if got, want := p.String(start), "m: 2 of 2 packages (100%), 0s"; got != want {
		t.Errorf("progress after the build: %q, want %q (go build -v said %q)", got, want, out)
	}
}
