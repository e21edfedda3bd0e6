package e2e

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const soloGroup = `group: {{GROUP}}
nodes:
  solo:
    image: {rootfs: nodes/solo/rootfs}
    init: none
    firewall: {served: [80]}
`

// TestRuntimeClassMissing: plan and apply stop before any push, naming the RuntimeClass.
func TestRuntimeClassMissing(t *testing.T) {
	t.Parallel()
	g := NewGroup(t, "norc", strings.Replace(soloGroup, "nodes:", "runtimeClassName: nope\nnodes:", 1), "solo")
	for _, verb := range [][]string{{"plan"}, {"apply", "--yes"}} {
		r := g.MustRun(1, verb...)
		if !strings.Contains(r.Stderr, `RuntimeClass "nope"`) || !strings.Contains(r.Stderr, "slipway.yaml:2") {
			t.Errorf("%s: want an error naming RuntimeClass \"nope\" at slipway.yaml:2, got %s", verb[0], r)
		}
	}
	if tags := g.RepoTags("solo"); tags != nil {
		t.Errorf("registry has %s/%s/solo with tags %v: something was pushed", g.Env.Registry, g.Name, tags)
	}
	if g.NamespaceExists() {
		t.Errorf("namespace %s was created", g.Name)
	}
}

// TestRegistryDown: apply fails naming the registry and changes nothing in the cluster, for
// a new group and for one already applied.
func TestRegistryDown(t *testing.T) {
	t.Parallel()
	t.Run("new group", func(t *testing.T) {
		t.Parallel()
		g := NewGroup(t, "regnew", soloGroup, "solo").WithEnv("K8S_REGISTRY=127.0.0.1:1")
		r := g.MustRun(1, "apply", "--yes")
		if !strings.Contains(r.Stderr, "127.0.0.1:1") {
			t.Errorf("apply: want an error naming the registry 127.0.0.1:1, got %s", r)
		}
		if g.NamespaceExists() {
			t.Errorf("namespace %s was created", g.Name)
		}
	})
	t.Run("existing group", func(t *testing.T) {
		t.Parallel()
		g := NewGroup(t, "regold", soloGroup, "solo")
		g.MustRun(0, "apply", "--yes")
		before := g.PodUIDs()
		dep, err := g.Kube.Clientset.AppsV1().Deployments(g.Name).Get(context.Background(), "solo", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		st := g.State().State
		g.WriteFile("nodes/solo/rootfs/etc/motd", "new\n")
		g.WithEnv("K8S_REGISTRY=127.0.0.1:1")
		r := g.MustRun(1, "apply", "--yes")
		if !strings.Contains(r.Stderr, "127.0.0.1:1") {
			t.Errorf("apply: want an error naming the registry 127.0.0.1:1, got %s", r)
		}
		if diff := cmp.Diff(before, g.PodUIDs()); diff != "" {
			t.Errorf("pods (-want +got):\n%s", diff)
		}
		after, err := g.Kube.Clientset.AppsV1().Deployments(g.Name).Get(context.Background(), "solo", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(dep.ResourceVersion, after.ResourceVersion); diff != "" {
			t.Errorf("deployment solo changed (resourceVersion -want +got):\n%s", diff)
		}
		if diff := cmp.Diff(st, g.State().State); diff != "" {
			t.Errorf("state changed (-want +got):\n%s", diff)
		}
	})
}

// TestNamespaceOfAnotherGroup: plan, apply and destroy refuse a namespace labelled for
// another group, naming the owner.
func TestNamespaceOfAnotherGroup(t *testing.T) {
	t.Parallel()
	g := NewGroup(t, "owned", soloGroup, "solo")
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: g.Name, Labels: map[string]string{"slipway.dev/group": "other"}}}
	if _, err := g.Kube.Clientset.CoreV1().Namespaces().Create(context.Background(), ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, verb := range [][]string{{"plan"}, {"apply", "--yes"}, {"destroy", "--yes"}} {
		r := g.MustRun(1, verb...)
		if !strings.Contains(r.Stderr, "belongs to group other") {
			t.Errorf("%s: want an error naming group other, got %s", verb[0], r)
		}
	}
	if tags := g.RepoTags("solo"); tags != nil {
		t.Errorf("registry has tags %v: apply pushed before its preflight", tags)
	}
	live, err := g.Kube.Clientset.CoreV1().Namespaces().Get(context.Background(), g.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("namespace %s: %v", g.Name, err)
	}
	if live.DeletionTimestamp != nil || live.Labels["slipway.dev/group"] != "other" {
		t.Errorf("namespace %s was touched: %+v", g.Name, live.ObjectMeta)
	}
}
