package devcluster

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The embedded pins must be the tools modules of the repo: `go generate ./internal/devcluster`.
func TestPinsMatchToolsModules(t *testing.T) {
	for _, tl := range tools {
		for _, ext := range []string{"mod", "sum"} {
			want, err := os.ReadFile(filepath.Join("..", "..", "tools", tl.module, "go."+ext))
			if err != nil {
				t.Fatal(err)
			}
			got, err := pins.ReadFile("pins/" + tl.module + "." + ext)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != string(want) {
				t.Errorf("pins/%s.%s differs from tools/%s/go.%s: run go generate ./internal/devcluster", tl.module, ext, tl.module, ext)
			}
		}
		mod, _ := pins.ReadFile("pins/" + tl.module + ".mod")
		if !strings.Contains(string(mod), tl.from) {
			t.Errorf("tools/%s/go.mod does not pin %s", tl.module, tl.from)
		}
	}
}

func TestKwokConfigExcludesOutcomesFromPodReady(t *testing.T) {
	dir := t.TempDir()
	for _, s := range stockStages {
		stage := "apiVersion: kwok.x-k8s.io/v1alpha1\nkind: Stage\nmetadata: {name: x}\nspec:\n  selector:\n    matchExpressions: []\n"
		if err := os.WriteFile(filepath.Join(dir, strings.ReplaceAll(s, "/", "_")), []byte(stage), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := kwokConfig(dir, "/data/volumes")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"operator: NotIn", "- never-ready", "- crashloop", "- pull-error", "name: slipway-pvc-provision", "pv.kubernetes.io/provisioned-by", "name: slipway-never-ready", "name: slipway-crashloop", "name: slipway-pull-error", "reason: CrashLoopBackOff", "reason: ErrImagePull", "reason: ImagePullBackOff"} {
		if !strings.Contains(string(cfg), want) {
			t.Errorf("kwok config lacks %q", want)
		}
	}
}

func TestFreePortsAreDistinct(t *testing.T) {
	ps, err := freePorts(20)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, p := range ps {
		if seen[p] {
			t.Fatalf("port %d picked twice", p)
		}
		seen[p] = true
	}
}

func TestDownWithNothingRunning(t *testing.T) {
	err := Down(filepath.Join(t.TempDir(), "dev"))
	if !errors.Is(err, ErrNotRunning) {
		t.Fatalf("Down of an empty dir = %v, want ErrNotRunning", err)
	}
}

func TestMissingGoIsNamed(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir()) // nothing cached
	t.Setenv("PATH", t.TempDir())           // no go
	_, err := EnsureBinaries(context.Background(), nil)
	if err == nil || !strings.Contains(err.Error(), "needs the Go toolchain") {
		t.Fatalf("EnsureBinaries without go = %v, want an error naming the Go toolchain", err)
	}
}

func TestFailedBuildShowsTail(t *testing.T) {
	dir := t.TempDir()
	// A fake go that fails the way a broken build does.
	fake := "#!/bin/sh\necho 'compile: something broke' >&2\nexit 1\n"
	if err := os.WriteFile(filepath.Join(dir, "go"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	t.Setenv("PATH", dir)
	_, err := EnsureBinaries(context.Background(), nil)
	if err == nil || !strings.Contains(err.Error(), "build of k8s.io/kubernetes v1.37.2 failed") || !strings.Contains(err.Error(), "something broke") {
		t.Fatalf("failed build = %v, want the module named and the output's tail", err)
	}
}

func TestFeatureGates(t *testing.T) {
	tests := []struct {
		gates []string
		args  []string
		ok    bool
	}{
		{nil, nil, true},
		{[]string{"ContainerStopSignals=true"}, []string{"--feature-gates=ContainerStopSignals=true"}, true},
		{[]string{"A=true", "B=false"}, []string{"--feature-gates=A=true,B=false"}, true},
		{[]string{"ContainerStopSignals"}, nil, false},
		{[]string{"A=yes"}, nil, false},
		{[]string{"A,B=true"}, nil, false},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.gates, ","), func(t *testing.T) {
			err := checkFeatureGates(tt.gates)
			if (err == nil) != tt.ok {
				t.Fatalf("checkFeatureGates(%q) = %v, want ok %t", tt.gates, err, tt.ok)
			}
			if tt.ok {
				if d := cmp.Diff(tt.args, featureGateArgs(tt.gates)); d != "" {
					t.Errorf("featureGateArgs (-want +got):\n%s", d)
				}
			}
		})
	}
}

// PIDs reads every pid file of the environment, by component, and leaves out one that holds
// no number.
func TestEnvPIDs(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "pids"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string]string{"kube-apiserver": "123\n", "registry": "456\n", "broken": "x\n"} {
		if err := os.WriteFile(filepath.Join(dir, "pids", name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got := (&Env{Dir: dir}).PIDs()
	if diff := cmp.Diff(map[string]int{"kube-apiserver": 123, "registry": 456}, got); diff != "" {
		t.Errorf("PIDs() (-want +got):\n%s", diff)
	}
}
