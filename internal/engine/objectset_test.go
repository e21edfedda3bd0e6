package engine

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"
	"weak"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/spec"
	"slipway.dev/slipway/internal/state"
)

// Issue 17: an apply holds the objects of the nodes still to go, not every node's to its end.
// Three new nodes, one at a time: when the last node's Deployment is applied, the first
// node's objects can be collected, and the caller's plan no longer holds them either.
func TestApplyReleasesEachNodesObjects(t *testing.T) {
	f := newFakeCluster()
	g := &spec.Group{Name: "demo"}
	p := &plan.Plan{Group: "demo", Namespace: "demo", MachineIDs: map[string]string{}}
	held := map[string][]weak.Pointer[unstructured.Unstructured]{}
	for i := range 3 {
		name := fmt.Sprintf("n%d", i)
		g.Nodes = append(g.Nodes, &spec.Node{Name: name})
		p.MachineIDs[name] = "id"
		p.Images = append(p.Images, plan.Image{Name: name, Node: name, Tag: "r/" + name + ":t", Digest: imgA})
		d := testDeployment(name, imgA, 1)
		d.SetLabels(map[string]string{spec.LabelNode: name})
		held[name] = append(held[name], weak.Make(d))
		p.Desired = append(p.Desired, d)
		p.Nodes = append(p.Nodes, plan.NodePlan{Node: name, Changes: []plan.Change{{Key: depKey(name), Action: plan.Create}}})
	}
	collected := func(node string) bool {
		runtime.GC()
		for _, w := range held[node] {
			if w.Value() != nil {
				return false
			}
		}
		return true
	}
	var mu sync.Mutex
	var seen []string
	f.OnCall = func(call string) {
		if call != "apply Deployment n2" {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, fmt.Sprintf("n0 collected %v, n2 collected %v", collected("n0"), collected("n2")))
	}
	store := &memStore{Doc: &state.Document{Group: "demo"}}
	e := New(Options{Kube: f, Parallelism: 1, NewNodes: 1, Timeout: time.Minute})
	if err := e.Apply(context.Background(), p, Target{Group: g, Namespace: "demo", Store: store}); err != nil {
		t.Fatalf("apply: %v", err)
	}
	if p.Desired != nil {
		t.Errorf("after apply the plan still holds %d objects", len(p.Desired))
	}
	mu.Lock()
	defer mu.Unlock()
	if want := "n0 collected true, n2 collected false"; len(seen) != 1 || seen[0] != want {
		t.Errorf("when n2's Deployment was applied: %q, want %q", seen, want)
	}
}
