package dryrun

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"slipway.dev/slipway/internal/kube"
	"slipway.dev/slipway/internal/plan"
)

// newNSCluster answers dry runs as the API server does in a namespace that does not exist:
// a body over limit bytes is refused for its size, every other namespaced create with
// NamespaceNotFound. It logs the names dry-run, and refuses an apply that is not one.
type newNSCluster struct {
	limit int
	mu    sync.Mutex
	dry   []string
}

func (c *newNSCluster) Apply(ctx context.Context, obj runtime.Object, opts kube.ApplyOptions) (*unstructured.Unstructured, error) {
	u := obj.(*unstructured.Unstructured)
	if !opts.DryRun {
		return nil, fmt.Errorf("%s %s: not a dry run", u.GetKind(), u.GetName())
	}
	c.mu.Lock()
	c.dry = append(c.dry, u.GetKind()+"/"+u.GetName())
	c.mu.Unlock()
	if b, _ := json.Marshal(u.Object); len(b) > c.limit {
		return nil, apierrors.NewRequestEntityTooLargeError("limit is " + fmt.Sprint(c.limit))
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "namespaces"}, u.GetNamespace())
}

func obj(kind, name string, env map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": kind,
		"metadata": map[string]any{"name": name, "namespace": "demo", "labels": map[string]any{"slipway.dev/node": name}},
		"spec":     map[string]any{"replicas": int64(1)},
	}}
	if env != nil {
		u.Object["spec"].(map[string]any)["env"] = env
	}
	return u
}

// Issue 17: apply's first run into a new namespace dry-runs one create per shape (the largest),
// not every create, and still names every object the server refuses; plan dry-runs them all
// (issue 12).
func TestDryRunCreatesInNewNamespace(t *testing.T) {
	var desired []*unstructured.Unstructured
	for i := range 50 {
		n := fmt.Sprintf("n%02d", i)
		desired = append(desired, obj("Service", n, nil), obj("ServiceAccount", n, nil), obj("Deployment", n, nil))
	}
	big := strings.Repeat("x", 4000)
	desired = append(desired, obj("Deployment", "big1", map[string]any{"BIG": big}), obj("Deployment", "big2", map[string]any{"BIG": big + "y"}),
		obj("Deployment", "small", map[string]any{"BIG": "x"}))
	for _, tc := range []struct {
		name     string
		forApply bool
		dryRuns  int
	}{
		{"plan", false, len(desired)},
		// Service, ServiceAccount, Deployment, Deployment with env; the env shape's largest
		// is refused, so the other two of that shape are dry-run too.
		{"apply", true, 4 + 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &newNSCluster{limit: 3000}
			_, _, err := Run(context.Background(), c, 10, Input{Desired: desired, NewNamespace: "demo", ForApply: tc.forApply})
			if len(c.dry) != tc.dryRuns {
				t.Errorf("%d dry runs, want %d: %v", len(c.dry), tc.dryRuns, c.dry)
			}
			var refused []string
			for _, n := range []string{"big1", "big2", "small"} {
				if err != nil && strings.Contains(err.Error(), "node "+n+":") {
					refused = append(refused, n)
				}
			}
			if d := cmp.Diff([]string{"big1", "big2"}, refused); d != "" {
				t.Errorf("refused nodes (-want +got):\n%s\nerror: %v", d, err)
			}
			if tc.forApply && !slices.Contains(c.dry, "Deployment/big2") {
				t.Errorf("the largest of the env shape was not dry-run first: %v", c.dry)
			}
		})
	}
	// In a namespace that exists, every create is dry-run for apply too (validation and
	// admission run there).
	c := &newNSCluster{limit: 1 << 20}
	if _, _, err := Run(context.Background(), c, 10, Input{Desired: desired, Live: map[plan.Key]*unstructured.Unstructured{}, ForApply: true}); err != nil {
		t.Fatal(err)
	}
	if len(c.dry) != len(desired) {
		t.Errorf("existing namespace: %d dry runs, want %d", len(c.dry), len(desired))
	}
}

// The objects found unchanged are dry-run never and handed on as such, so that plan.Compute
// does not compare them again; a changed one is dry-run and not in the set.
func TestDryRunHandsOnTheUnchanged(t *testing.T) {
	mk := func(name string, replicas int64) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment",
			"metadata": map[string]any{"name": name, "namespace": "demo"}, "spec": map[string]any{"replicas": replicas}}}
		return u
	}
	desired := []*unstructured.Unstructured{mk("same", 1), mk("changed", 1)}
	live := map[plan.Key]*unstructured.Unstructured{}
	for _, d := range []*unstructured.Unstructured{mk("same", 1), mk("changed", 0)} {
		live[plan.KeyOf(d)] = d
	}
	c := &newNSCluster{limit: 1 << 20}
	unchanged := map[plan.Key]bool{}
	if _, _, err := Run(context.Background(), c, 2, Input{Desired: desired, Live: live, Unchanged: unchanged}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[plan.Key]bool{plan.KeyOf(desired[0]): true}, unchanged); diff != "" {
		t.Errorf("unchanged (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"Deployment/changed"}, c.dry); diff != "" {
		t.Errorf("dry runs (-want +got):\n%s", diff)
	}
}
