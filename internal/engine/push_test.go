package engine

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/spec"
	"slipway.dev/slipway/internal/state"
)

// gatedRegistry publishes at once, but for the refs in gates, which wait until their channel
// is closed, and the refs in failing, which fail.
type gatedRegistry struct {
	mu      sync.Mutex
	gates   map[string]chan struct{}
	failing map[string]bool
	started map[string]bool
}

func (r *gatedRegistry) Lookup(context.Context, string) (v1.Hash, bool, error) {
	return v1.Hash{}, false, nil
}

func (r *gatedRegistry) Publish(ctx context.Context, ref string, img v1.Image, _ func(done, total int64)) (name.Digest, error) {
	r.mu.Lock()
	r.started[ref] = true
	gate, fail := r.gates[ref], r.failing[ref]
	r.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return name.Digest{}, ctx.Err()
		}
	}
	if fail {
		return name.Digest{}, errors.New("registry refused it")
	}
	h, err := img.Digest()
	if err != nil {
		return name.Digest{}, err
	}
	repo, _, _ := strings.Cut(ref, ":")
	return name.NewDigest(repo+"@"+h.String(), name.WeakValidation)
}

// pushPlan is a first apply of nodes, each with an image of its own to push, and an engine
// that built those images.
func pushPlan(t *testing.T, reg *gatedRegistry, nodes ...string) (*Engine, *plan.Plan, Target, *fakeCluster) {
	t.Helper()
	f := newFakeCluster()
	g := &spec.Group{Name: "demo"}
	p := &plan.Plan{Group: "demo", Namespace: "demo", MachineIDs: map[string]string{}}
	e := New(Options{Kube: f, Publisher: reg, Parallelism: 10, NewNodes: 10, Pushes: 1, Timeout: time.Minute})
	for _, n := range nodes {
		img, err := random.Image(64, 1)
		if err != nil {
			t.Fatal(err)
		}
		h, _ := img.Digest()
		e.images[n] = img
		digest := "r/" + n + "@" + h.String()
		g.Nodes = append(g.Nodes, &spec.Node{Name: n})
		p.MachineIDs[n] = "id-" + n
		p.Images = append(p.Images, plan.Image{Name: n, Node: n, Tag: "r/" + n + ":t", Digest: digest, Push: true})
		p.Desired = append(p.Desired, testDeployment(n, digest, 1))
		p.Nodes = append(p.Nodes, plan.NodePlan{Node: n, Changes: []plan.Change{{Key: depKey(n), Action: plan.Create}}})
	}
	// The group's namespace is created once an image is in the registry.
	nsObj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "demo"}}}
	p.Desired = append(p.Desired, nsObj)
	p.Nodes = append(p.Nodes, plan.NodePlan{Node: "", Changes: []plan.Change{{Key: plan.Key{Kind: "Namespace", Name: "demo"}, Action: plan.Create}}})
	store := &memStore{Doc: &state.Document{Group: "demo"}}
	return e, p, Target{Group: g, Namespace: "demo", Store: store}, f
}

// A node's objects go as soon as its own image is pushed, not once every node's is: node a's
// Deployment is applied while b's push still waits (issue 17).
func TestNodeGoesOnceItsOwnPushIsDone(t *testing.T) {
	gate := make(chan struct{})
	reg := &gatedRegistry{gates: map[string]chan struct{}{"r/b:t": gate}, started: map[string]bool{}}
	e, p, tg, f := pushPlan(t, reg, "a", "b")
	done := make(chan error, 1)
	go func() { done <- e.Apply(context.Background(), p, tg) }()
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(strings.Join(f.Calls(), "\n"), "apply Deployment a") {
		if time.Now().After(deadline) {
			t.Fatalf("node a's Deployment not applied while b pushes; calls: %v", f.Calls())
		}
		time.Sleep(5 * time.Millisecond)
	}
	for _, c := range f.Calls() {
		if c == "apply Deployment b" {
			t.Fatal("node b's Deployment applied before its image was pushed")
		}
	}
	close(gate)
	if err := <-done; err != nil {
		t.Fatalf("apply: %v", err)
	}
	if got := strings.Join(f.Calls(), "\n"); !strings.Contains(got, "apply Deployment b") {
		t.Errorf("node b's Deployment never applied; calls:\n%s", got)
	}
}

// With every push failing nothing of the cluster changes; with one failing, only its node
// stops.
func TestFailedPushes(t *testing.T) {
	for _, tc := range []struct {
		name      string
		failing   []string
		wantCalls bool // any call that changes the cluster
		wantErr   []string
	}{
		{"every push fails", []string{"r/a:t", "r/b:t"}, false, []string{"node a", "node b", "registry refused it"}},
		{"one push fails", []string{"r/b:t"}, true, []string{"node b", "registry refused it"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg := &gatedRegistry{failing: map[string]bool{}, started: map[string]bool{}}
			for _, r := range tc.failing {
				reg.failing[r] = true
			}
			e, p, tg, f := pushPlan(t, reg, "a", "b")
			err := e.Apply(context.Background(), p, tg)
			if err == nil {
				t.Fatal("apply succeeded")
			}
			for _, w := range tc.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			var changes []string
			for _, c := range f.Calls() {
				if strings.HasPrefix(c, "apply ") || strings.HasPrefix(c, "delete ") {
					changes = append(changes, c)
				}
			}
			if got := slices.Contains(changes, "apply Namespace demo"); got != tc.wantCalls {
				t.Errorf("namespace applied: %v (changes %v); want %v", got, changes, tc.wantCalls)
			}
			if got := len(changes) > 0; got != tc.wantCalls {
				t.Errorf("changes to the cluster: %v; want any: %v", changes, tc.wantCalls)
			}
			for _, c := range changes {
				if c == "apply Deployment b" {
					t.Errorf("node b's Deployment applied after its push failed")
				}
			}
		})
	}
}
