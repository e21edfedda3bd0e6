package e2e

// Issue 38: per-app targets and deployment ids.

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const targetsGroup = `group: {{GROUP}}
defaults:
  state: {size: 1Gi}
nodes:
  web:
    app: front
    image: {rootfs: nodes/web/rootfs}
    firewall: {served: [80], published: [80]}
  cache:
    app: front
    image: {rootfs: nodes/cache/rootfs}
    init: none
    firewall: {served: [6379]}
  db:
    app: data
    image: {rootfs: nodes/db/rootfs}
    init: none
    firewall: {served: [5432]}
`

// deployments names the Deployments of namespace ns, sorted; none when it does not exist.
func (g *Group) deployments(ns string) []string {
	g.t.Helper()
	l, err := g.Kube.Clientset.AppsV1().Deployments(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		g.t.Fatalf("list Deployments of %s: %v", ns, err)
	}
	var out []string
	for _, d := range l.Items {
		out = append(out, d.Name)
	}
	slices.Sort(out)
	return out
}

// dropNamespaces deletes namespaces a test made beside the group's own, unless it failed.
func (g *Group) dropNamespaces(names ...string) {
	g.t.Cleanup(func() {
		if g.t.Failed() {
			return
		}
		for _, ns := range names {
			_ = g.Kube.Clientset.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{})
		}
	})
}

// TestTargetsApart: two targets of one group, applied at once, each into its own namespace with
// its own state and lock: both succeed and neither touches the other's objects.
func TestTargetsApart(t *testing.T) {
	t.Parallel()
	g := NewGroup(t, "tgt", targetsGroup, "web", "cache", "db")
	front, data := g.Name+"-front", g.Name+"-data"
	g.dropNamespaces(front, data)
	var wg sync.WaitGroup
	results := map[string]Result{}
	var mu sync.Mutex
	for _, target := range []string{"front", "data"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := g.Run("apply", "--yes", "--target", target)
			mu.Lock()
			results[target] = r
			mu.Unlock()
		}()
	}
	wg.Wait()
	for target, r := range results {
		if r.Code != 0 {
			t.Fatalf("apply --target %s: %s", target, r)
		}
	}
	got := map[string][]string{front: g.deployments(front), data: g.deployments(data), g.Name: g.deployments(g.Name)}
	want := map[string][]string{front: {"cache", "web"}, data: {"db"}, g.Name: nil}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("Deployments by namespace (-want +got):\n%s", d)
	}
	for target, nodes := range map[string][]string{"front": {"cache", "web"}, "data": {"db"}} {
		st := g.stateOf(g.Name + "." + target) // the target's key (spec.Identity)
		if st.State == nil || st.State.Namespace != g.Name+"-"+target {
			t.Fatalf("state %s.%s: %+v", g.Name, target, st)
		}
		var names []string
		for n := range st.State.Nodes {
			names = append(names, n)
		}
		slices.Sort(names)
		if d := cmp.Diff(nodes, names); d != "" {
			t.Errorf("state of target %s: nodes (-want +got):\n%s", target, d)
		}
	}
	// Each target's plan is its own: no changes for either, and status names only its nodes.
	for _, target := range []string{"front", "data"} {
		g.MustRun(0, "plan", "--detailed-exitcode", "--target", target)
	}
	if r := g.MustRun(0, "status", "--target", "data"); !strings.Contains(r.Stdout, "db") || strings.Contains(r.Stdout, "cache") {
		t.Errorf("status --target data shows another target's node:\n%s", r.Stdout)
	}
	// A target no node names is refused, naming those there are.
	if r := g.MustRun(1, "plan", "--target", "mail"); !strings.Contains(r.Stderr, `has app "mail"; targets: all, data, front`) {
		t.Errorf("plan --target mail: %s", r)
	}
	// Destroying one target leaves the other.
	g.MustRun(0, "destroy", "--yes", "--target", "data")
	if d := cmp.Diff([]string{"cache", "web"}, g.deployments(front)); d != "" {
		t.Errorf("after destroy --target data, %s (-want +got):\n%s", front, d)
	}
	g.MustRun(0, "destroy", "--yes", "--target", "front")
}

// stateOf is `state show -o json --group name`.
func (g *Group) stateOf(name string) StateView {
	g.t.Helper()
	return g.showState("state", "show", "-o", "json", "--group", name)
}

// TestDeploymentID: a deployment id lengthens every target's namespace; one that makes a
// namespace longer than 63 characters is refused before any request reaches the cluster.
func TestDeploymentID(t *testing.T) {
	t.Parallel()
	g := NewGroup(t, "did", targetsGroup, "web", "cache", "db")
	ns := g.Name + "-front-d7"
	g.dropNamespaces(ns)
	g.MustRun(0, "apply", "--yes", "--target", "front", "--deployment-id", "d7")
	if d := cmp.Diff([]string{"cache", "web"}, g.deployments(ns)); d != "" {
		t.Errorf("Deployments of %s (-want +got):\n%s", ns, d)
	}
	if g.NamespaceExists() {
		t.Errorf("namespace %s exists: the id was not appended", g.Name)
	}
	g.WithEnv("SLIPWAY_DEPLOYMENT_ID=d7")
	g.MustRun(0, "plan", "--detailed-exitcode", "--target", "front") // the variable names the same namespace

	proxy := g.CountRequests()
	long := strings.Repeat("x", 63-len(g.Name))
	for _, args := range [][]string{{"apply", "--yes"}, {"apply", "--yes", "--target", "data"}, {"destroy", "--yes", "--target", "front"}} {
		r := g.MustRun(1, append(args, "--deployment-id", long)...)
		if !strings.Contains(r.Stderr, "is not a DNS label of at most 63 characters") || !strings.Contains(r.Stderr, long) {
			t.Errorf("%v: %s", args, r)
		}
	}
	if reqs := proxy.Requests(); len(reqs) != 0 {
		t.Errorf("a refused namespace reached the cluster: %d request(s), first %+v", len(reqs), reqs[0])
	}
	g.Kubeconfig = g.Env.Kubeconfig
	g.MustRun(0, "destroy", "--yes", "--target", "front")
}
