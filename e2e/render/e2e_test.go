package render_test

// End-to-end tests on the dev cluster (SPEC §10). They live in render_test so that render
// itself never imports client-go: only these test files do, through internal/kube.

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"

	"slipway.dev/slipway/internal/devcluster/devtest"
	"slipway.dev/slipway/internal/kube"
	"slipway.dev/slipway/internal/render"
	"slipway.dev/slipway/internal/render/rendertest"
	"slipway.dev/slipway/internal/spec"
	"slipway.dev/slipway/internal/state"
)

// warnings collects the API server's warnings (deprecated fields, unknown values…) that a
// plain error check would miss.
type warnings struct {
	mu   sync.Mutex
	list []string
}

func (w *warnings) HandleWarningHeader(code int, agent, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.list = append(w.list, fmt.Sprintf("%d %s", code, text))
}

func (w *warnings) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	l := w.list
	w.list = nil
	return l
}

// client connects to the dev cluster with a warning collector installed.
func client(t *testing.T, kubeconfig string) (*kube.Client, *warnings) {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	w := &warnings{}
	cfg.WarningHandler = w
	c, err := kube.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c, w
}

// testNamespace returns a fresh namespace name and deletes the namespace when the test ends.
func testNamespace(t *testing.T, c *kube.Client, prefix string) string {
	t.Helper()
	ns := fmt.Sprintf("%s-%x", prefix, rand.Text()[:6])
	ns = strings.ToLower(ns)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		err := c.Clientset.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Logf("delete namespace %s: %v", ns, err)
		}
	})
	return ns
}

// TestDryRunExamples applies every rendered object of the examples, and of the fixtures of
// the workload fields (SPEC §3a), with server-side dry-run and strict field validation (SPEC
// §9): no error and no warning.
func TestDryRunExamples(t *testing.T) {
	t.Setenv("SLIPWAY_RENDER_TOKEN", "render-fixture-token") // read by the config fixtures' secrets
	t.Setenv("APP_TOKEN", "example")                         // and these by examples/full's
	t.Setenv("SSO_CLIENT_SECRET", "example")
	env := devtest.Env(t)
	devtest.ServiceMonitorCRD(t, env) // the ServiceMonitors are dry-run too
	c, w := client(t, env.Kubeconfig)
	files := map[string]string{
		"hello": "../../examples/hello/slipway.yaml", "full": "../../examples/full/slipway.yaml",
		"labels": "../../internal/render/testdata/workload/labels.yaml", "placement": "../../internal/render/testdata/workload/placement.yaml",
		"disruption": "../../internal/render/testdata/workload/disruption.yaml", "probes": "../../internal/render/testdata/workload/probes.yaml",
		"config": "../../internal/render/testdata/workload/config.yaml", "role-config": "../../internal/render/testdata/workload/role-config.yaml",
		"servicemonitor": "../../internal/render/testdata/workload/servicemonitor.yaml",
		"state":          "../../internal/render/testdata/workload/state.yaml",
	}
	for example, file := range files {
		t.Run(example, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			g, err := spec.Load(file)
			if err != nil {
				t.Fatal(err)
			}
			for _, stop := range []bool{false, true} {
				in := rendertest.Input(g)
				in.Namespace = testNamespace(t, c, "render-dry-"+example)
				in.StopSignal = stop
				in.ServiceMonitors = true
				objs, err := render.Objects(in)
				if err != nil {
					t.Fatal(err)
				}
				// Namespaced objects are dry-run inside a namespace that exists; the Namespace
				// itself is dry-run first, then made for real.
				for _, dry := range []bool{true, false} {
					if _, err := c.Apply(ctx, objs[0], kube.ApplyOptions{DryRun: dry}); err != nil {
						t.Fatalf("stop signal %v: %v", stop, err)
					}
				}
				w.take()
				if example == "state" {
					// The removal Job the engine makes after a migration, from the node's template.
					d, _ := rendertest.Find[*appsv1.Deployment](objs, "Deployment", "db")
					objs = append(objs, render.StateRemovalJob(in.Namespace, g.Name, "db", "14", in.Images["db"], "", &d.Spec.Template.Spec))
				}
				for _, o := range objs {
					if _, err := c.Apply(ctx, o, kube.ApplyOptions{DryRun: true}); err != nil {
						t.Errorf("stop signal %v: %v", stop, err)
					}
					if ws := w.take(); len(ws) > 0 {
						t.Errorf("stop signal %v: %s %s: warnings %q", stop, o.GetObjectKind().GroupVersionKind().Kind, o.GetName(), ws)
					}
				}
			}
		})
	}
}

// TestKustomizePackageOnCluster renders examples/hello with the slipway binary (images pushed
// to the dev registry, digests from it, machine IDs from a state file), applies the package
// with `kubectl apply -k`, and waits for the claims to bind and every pod to become ready.
func TestKustomizePackageOnCluster(t *testing.T) {
	env := devtest.Env(t)
	c, _ := client(t, env.Kubeconfig)
	ns := testNamespace(t, c, "render-kustomize")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	tmp := t.TempDir()
	example, _ := filepath.Abs("../../examples/hello/slipway.yaml")
	stateFile := filepath.Join(tmp, "state.json")
	ids := map[string]string{"web": uuid.NewString(), "db": uuid.NewString()}
	writeState(t, ctx, stateFile, ids)
	run := slipwayRunner(t, ctx, tmp)
	slipway := func(args ...string) (string, string) {
		t.Helper()
		return run(append([]string{"-f", example, "-n", ns, "--registry", env.Registry, "--state", "file://" + stateFile}, args...)...)
	}
	dir := filepath.Join(tmp, "pkg")
	_, stderr := slipway("render", "--push", "--out", dir)
	if strings.Contains(stderr, "warning") {
		t.Errorf("render warned: %s", stderr)
	}
	first := rendertest.ReadDir(t, dir)
	// Without --push, digests come from the registry and must be the pushed ones.
	slipway("render", "--out", dir)
	if second := rendertest.ReadDir(t, dir); !mapsEqual(first, second) {
		t.Error("a second render of the same input is not byte-identical")
	}
	stream, _ := slipway("render")
	if !strings.Contains(stream, env.Registry+"/"+ns+"/web@sha256:") || !strings.Contains(stream, ids["web"]) {
		t.Errorf("render output lacks the pushed digest or the state's machine ID:\n%s", stream)
	}

	kubectl := exec.CommandContext(ctx, filepath.Join(env.BinDir, "kubectl"), "--kubeconfig", env.Kubeconfig, "apply", "-k", dir)
	if out, err := kubectl.CombinedOutput(); err != nil {
		t.Fatalf("kubectl apply -k: %v\n%s", err, out)
	} else {
		t.Logf("kubectl apply -k:\n%s", out)
		// The package keeps slipway's order (sortOptions fifo): policies before Deployments.
		deny, deploy := bytes.Index(out, []byte("networkpolicy.networking.k8s.io/default-deny")), bytes.Index(out, []byte("deployment.apps/"))
		if deny < 0 || deploy < 0 || deny > deploy {
			t.Error("kubectl apply -k did not apply the NetworkPolicies before the Deployments")
		}
	}
	waitReady(t, ctx, c, ns, 2, 3)
}

// slipwayRunner builds the slipway binary into dir and returns a function that runs it with
// args, failing the test when it fails, and returns its stdout and stderr.
func slipwayRunner(t *testing.T, ctx context.Context, dir string) func(args ...string) (string, string) {
	t.Helper()
	bin := buildSlipway(t, ctx, dir)
	return func(args ...string) (string, string) {
		t.Helper()
		return bin.run(t, args...)
	}
}

// slipwayBin is a built slipway binary. Its registry auth file has no credentials: the dev
// registry is anonymous, and the operator's own docker config must not leak into the test.
type slipwayBin struct {
	ctx          context.Context
	path, noAuth string
}

func buildSlipway(t *testing.T, ctx context.Context, dir string) slipwayBin {
	t.Helper()
	b := slipwayBin{ctx: ctx, path: filepath.Join(dir, "slipway"), noAuth: filepath.Join(dir, "no-auth.json")}
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", b.path, "../../cmd/slipway").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	if err := os.WriteFile(b.noAuth, []byte("{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return b
}

// run runs the binary with args, failing t (which may be a subtest's) when it fails.
func (b slipwayBin) run(t *testing.T, args ...string) (string, string) {
	t.Helper()
	cmd := exec.CommandContext(b.ctx, b.path, args...)
	cmd.Env = append(os.Environ(), "REGISTRY_AUTH_FILE="+b.noAuth)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("slipway %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String(), stderr.String()
}

func writeState(t *testing.T, ctx context.Context, path string, ids map[string]string) {
	t.Helper()
	b, err := state.Open(ctx, "file://"+path, "hello", nil)
	if err != nil {
		t.Fatal(err)
	}
	doc := &state.Document{Group: "hello", Nodes: map[string]*state.NodeState{
		"web": {MachineID: ids["web"], Roles: map[string]*state.RoleState{"worker": {Replicas: 2}}},
		"db":  {MachineID: ids["db"]},
	}}
	if err := b.Write(ctx, doc); err != nil {
		t.Fatal(err)
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// waitReady waits until every claim of ns is Bound and every Deployment has all its replicas
// ready and updated, and there are as many of each as expected, reporting what is still
// missing when ctx ends.
func waitReady(t *testing.T, ctx context.Context, c *kube.Client, ns string, claims, deployments int) {
	t.Helper()
	var missing []string
	for {
		missing = missing[:0]
		pvcs, err := c.Clientset.CoreV1().PersistentVolumeClaims(ns).List(ctx, metav1.ListOptions{})
		if err == nil {
			for _, p := range pvcs.Items {
				if p.Status.Phase != corev1.ClaimBound {
					missing = append(missing, fmt.Sprintf("claim %s is %s", p.Name, p.Status.Phase))
				}
			}
			if len(pvcs.Items) != claims {
				missing = append(missing, fmt.Sprintf("%d claims, want %d", len(pvcs.Items), claims))
			}
		}
		deps, err2 := c.Clientset.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
		if err2 == nil {
			for _, d := range deps.Items {
				if !deploymentReady(&d) {
					missing = append(missing, fmt.Sprintf("deployment %s: %d/%d ready", d.Name, d.Status.ReadyReplicas, *d.Spec.Replicas))
				}
			}
			if len(deps.Items) != deployments {
				missing = append(missing, fmt.Sprintf("%d deployments, want %d", len(deps.Items), deployments))
			}
		}
		if err == nil && err2 == nil && len(missing) == 0 {
			pods, _ := c.Clientset.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
			t.Logf("ready: %d pods, claims bound", len(pods.Items))
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("namespace %s not ready: %v %v %s", ns, err, err2, strings.Join(missing, "; "))
		case <-time.After(time.Second):
		}
	}
}

func deploymentReady(d *appsv1.Deployment) bool {
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	return d.Status.ObservedGeneration >= d.Generation && d.Status.UpdatedReplicas == want &&
		d.Status.ReadyReplicas == want && d.Status.Replicas == want
}
