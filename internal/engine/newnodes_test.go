package engine

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/spec"
	"slipway.dev/slipway/internal/state"
)

// Issue 17 item 4: nodes deployed for the first time go NewNodes at a time, while updates
// of running nodes stay Parallelism at a time. Four new nodes and two updated ones, all on an
// image whose pods wait to be released: with Parallelism 1 and NewNodes 10, the four new
// Deployments and one updated one are applied before any rollout ends; the second update
// waits for the first.
func TestNewNodesNotPaced(t *testing.T) {
	f := newFakeCluster()
	ctx := context.Background()
	g := &spec.Group{Name: "demo"}
	doc := &state.Document{Group: "demo", Namespace: "demo", Nodes: map[string]*state.NodeState{}}
	p := &plan.Plan{Group: "demo", Namespace: "demo", MachineIDs: map[string]string{}}
	for i := range 6 {
		name := fmt.Sprintf("n%d", i)
		g.Nodes = append(g.Nodes, &spec.Node{Name: name})
		p.MachineIDs[name] = "id"
		p.Images = append(p.Images, plan.Image{Name: name, Node: name, Tag: "r/" + name + ":t", Digest: imgSlow})
		p.Desired = append(p.Desired, testDeployment(name, imgSlow, 1))
		c := plan.Change{Key: depKey(name), Action: plan.Create}
		if i >= 4 { // running already
			if _, err := f.Apply(ctx, testDeployment(name, imgA, 1), applyOptions()); err != nil {
				t.Fatal(err)
			}
			doc.Nodes[name] = &state.NodeState{MachineID: "id"}
			c = templateChange(name)
		}
		p.Nodes = append(p.Nodes, plan.NodePlan{Node: name, Changes: []plan.Change{c}})
	}
	f.ResetCalls()
	store := &memStore{Doc: doc}
	p.StateSerial = doc.Serial
	e := New(Options{Kube: f, Parallelism: 1, NewNodes: 10, Timeout: time.Minute})
	done := make(chan error, 1)
	go func() { done <- e.Apply(ctx, p, Target{Group: g, Namespace: "demo", Store: store}) }()

	applied := func() []string {
		var out []string
		for _, c := range f.Calls() {
			if n, ok := strings.CutPrefix(c, "apply Deployment "); ok {
				out = append(out, n)
			}
		}
		slices.Sort(out)
		return out
	}
	deadline := time.Now().Add(20 * time.Second)
	for len(applied()) < 5 {
		if time.Now().After(deadline) {
			t.Fatalf("before any rollout ended, Deployments applied: %v; want n0…n3 and one of n4, n5", applied())
		}
		time.Sleep(5 * time.Millisecond)
	}
	got := applied()
	if !slices.Equal(got[:4], []string{"n0", "n1", "n2", "n3"}) || len(got) != 5 {
		t.Errorf("before any rollout ended, Deployments applied: %v; want n0…n3 and one of n4, n5", got)
	}
	f.Release()
	if err := <-done; err != nil {
		t.Fatalf("apply: %v", err)
	}
	if got := applied(); len(got) != 6 {
		t.Errorf("after the apply, Deployments applied: %v", got)
	}
}
