package e2e

import (
	"context"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"slipway.dev/slipway/internal/devcluster/devtest"
	"slipway.dev/slipway/internal/kube"
)

// spireKwok counts the dev cluster's kwok nodes the SPIRE tests hold for their agents. An
// agent pod takes a kube node of its own among all of slipway's namespaces
// (render.SpireAntiAffinity), and the cluster has three kwok nodes (type: kwok) while the
// SPIRE tests running side by side want four: TestSpireReal parks two agents there, and
// TestSpireRetire runs two. In a loaded run one of TestSpireRetire's pods stayed Pending
// on the anti-affinity and its apply failed; each test now holds the nodes it places agents
// on, waiting for them when the others hold them.
var spireKwok struct {
	once  sync.Once
	mu    sync.Mutex
	cond  *sync.Cond
	total int // the cluster's kwok nodes
	used  int
}

// kwokHold is the kwok nodes one test holds, all given back when it ends (after the
// cleanups of its groups, which destroy a failed test's deployments).
type kwokHold struct {
	t *testing.T
	n int
}

// holdSpireKwok starts t's hold; call it before the test makes its groups.
func holdSpireKwok(t *testing.T) *kwokHold {
	t.Helper()
	spireKwok.once.Do(func() {
		spireKwok.cond = sync.NewCond(&spireKwok.mu)
		c, err := kube.New(devtest.Env(t).Kubeconfig, "")
		if err != nil {
			t.Fatal(err)
		}
		nodes, err := c.Clientset.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{LabelSelector: "type=kwok"})
		if err != nil {
			t.Fatalf("the dev cluster's kwok nodes: %v", err)
		}
		spireKwok.total = len(nodes.Items)
	})
	h := &kwokHold{t: t}
	t.Cleanup(func() {
		spireKwok.mu.Lock()
		defer spireKwok.mu.Unlock()
		spireKwok.used -= h.n
		spireKwok.cond.Broadcast()
	})
	return h
}

// take waits until n more kwok nodes are free of the other SPIRE tests' agents, and holds them.
func (h *kwokHold) take(n int) {
	h.t.Helper()
	spireKwok.mu.Lock()
	defer spireKwok.mu.Unlock()
	if h.n+n > spireKwok.total {
		h.t.Fatalf("the test places %d SPIRE agents on kwok nodes; the dev cluster has %d", h.n+n, spireKwok.total)
	}
	for spireKwok.used+n > spireKwok.total {
		spireKwok.cond.Wait()
	}
	spireKwok.used += n
	h.n += n
}
