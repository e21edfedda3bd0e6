package internal_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// pure are the packages of the pure core (DEVELOPERS.md): they compute, and never talk to a
// cluster, so they must not depend on client-go, even through another package.
var pure = []string{"spec", "render", "plan", "status"}

func TestPureCoreHasNoClientGo(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to list dependencies: %v", err)
	}
	for _, p := range pure {
		t.Run(p, func(t *testing.T) {
			if _, err := os.Stat(p); err != nil {
				t.Fatalf("internal/%s: %v", p, err)
			}
			// -deps lists every package p imports, directly or not; test files are not
			// included, so e2e tests may use internal/kube.
			out, err := exec.Command(gobin, "list", "-deps", "-f", "{{.ImportPath}}", "./"+filepath.ToSlash(p)).CombinedOutput()
			if err != nil {
				t.Fatalf("go list internal/%s: %v\n%s", p, err, out)
			}
			for _, dep := range strings.Fields(string(out)) {
				if dep == "k8s.io/client-go" || strings.HasPrefix(dep, "k8s.io/client-go/") {
					t.Errorf("internal/%s depends on %s: only internal/kube may import client-go", p, dep)
				}
				if dep == "slipway.dev/slipway/internal/kube" {
					t.Errorf("internal/%s depends on internal/kube", p)
				}
			}
		})
	}
}
