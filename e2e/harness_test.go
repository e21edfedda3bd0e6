// Package e2e runs the slipway binary against the dev cluster (SPEC §10) as an operator
// would: group files in a temporary directory, the state in a file there, real images in the
// dev registry, real objects in the API server. Each test uses its own group and namespace, so
// tests and packages run side by side on one cluster.
package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"slipway.dev/slipway/internal/devcluster"
	"slipway.dev/slipway/internal/devcluster/devtest"
	"slipway.dev/slipway/internal/kube"
)

var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "slipway-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "slipway")
	// No go generate: a group with sidecarSecrets makes this binary build the secrets sidecar
	// from the source it names, as `go run ./cmd/slipway` does (internal/secretsbin).
	out, err := exec.Command("go", "build", "-o", binary, "../cmd/slipway").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "build slipway: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// Group is one group file in its own directory, with its state next to it.
type Group struct {
	t    *testing.T
	Name string
	Dir  string
	Env  *devcluster.Env
	Kube *kube.Client
	// Kubeconfig is what the binary uses; a counting proxy may replace it.
	Kubeconfig string
	extraEnv   []string
	// outputs is every stdout and stderr of the binary's runs, for scanForValues; Run appends
	// under outputsMu.
	outputs []string
}

// outputsMu guards the appends of Run to a Group's outputs: some tests run the binary of one
// Group from several goroutines at once (TestTargetsApart, runAll). One lock for every Group,
// as tests copy a Group by value to run it with other settings.
var outputsMu sync.Mutex

// uniqueName returns a DNS label unique to this run: groups of parallel tests never meet.
func uniqueName(prefix string) string {
	return fmt.Sprintf("%s-%x", prefix, time.Now().UnixNano()%0xffffff)
}

// NewGroup writes a group file from tmpl (with {{GROUP}} replaced by a unique group name) and
// a small rootfs for every node named in nodes.
func NewGroup(t *testing.T, prefix, tmpl string, nodes ...string) *Group {
	t.Helper()
	env := devtest.Env(t)
	c, err := kube.New(env.Kubeconfig, "")
	if err != nil {
		t.Fatal(err)
	}
	g := &Group{t: t, Name: uniqueName(prefix), Dir: t.TempDir(), Env: env, Kube: c, Kubeconfig: env.Kubeconfig}
	for _, n := range nodes {
		g.WriteFile("nodes/"+n+"/rootfs/etc/hostname", n+"\n")
		g.WriteFile("nodes/"+n+"/rootfs/etc/os-release", "NAME=slipway-e2e\n")
	}
	g.WriteFile("slipway.yaml", strings.ReplaceAll(tmpl, "{{GROUP}}", g.Name))
	t.Cleanup(func() {
		if t.Failed() {
			return // leave the namespace for a look
		}
		_ = c.Clientset.CoreV1().Namespaces().Delete(context.Background(), g.Name, metav1.DeleteOptions{})
	})
	return g
}

// WriteFile writes a file under the group's directory.
func (g *Group) WriteFile(rel, content string) {
	g.t.Helper()
	p := filepath.Join(g.Dir, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		g.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		g.t.Fatal(err)
	}
}

// Result of one run of the binary.
type Result struct {
	Stdout, Stderr string
	Code           int
}

func (r Result) String() string {
	return fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", r.Code, r.Stdout, r.Stderr)
}

// Command returns the binary's command in the group's directory with the dev cluster's
// environment.
func (g *Group) Command(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Dir = g.Dir
	cmd.Env = append(os.Environ(),
		"KUBE_CONFIG_PATH="+g.Kubeconfig, "KUBECONFIG="+g.Kubeconfig, "K8S_REGISTRY="+g.Env.Registry,
		"SLIPWAY_STATE=", "K8S_NAMESPACE=",
	)
	cmd.Env = append(cmd.Env, g.extraEnv...)
	return cmd
}

// Run runs the binary and returns what it printed and its exit code.
func (g *Group) Run(args ...string) Result {
	g.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := g.Command(ctx, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := Result{Stdout: out.String(), Stderr: errb.String()}
	outputsMu.Lock()
	g.outputs = append(g.outputs, r.Stdout, r.Stderr)
	outputsMu.Unlock()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		r.Code = ee.ExitCode()
	case err != nil:
		g.t.Fatalf("run slipway %v: %v", args, err)
	}
	return r
}

// MustRun runs the binary and fails the test unless it exits with code.
func (g *Group) MustRun(code int, args ...string) Result {
	g.t.Helper()
	r := g.Run(args...)
	if r.Code != code {
		g.t.Fatalf("slipway %s: want exit %d, got %s", strings.Join(args, " "), code, r)
	}
	return r
}

// CountRequests points the group's binary at a proxy in front of the API server that holds
// the admin credential and records every request: the proof that a run made no write.
func (g *Group) CountRequests() *devtest.Proxy {
	g.t.Helper()
	p, err := devtest.APIProxy(g.Env)
	if err != nil {
		g.t.Fatal(err)
	}
	g.t.Cleanup(p.Close)
	path := filepath.Join(g.Dir, "proxy.kubeconfig")
	if err := p.WriteKubeconfig(path); err != nil {
		g.t.Fatal(err)
	}
	g.Kubeconfig = path
	return p
}
