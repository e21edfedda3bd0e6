// Package dryrun asks the API server, with server-side-apply dry runs, what it says of the
// objects a plan would create or change: what a changed-looking object would become (so that
// defaults the server fills in never show as changes), and whether it refuses one. The engine
// root calls it once per plan; it holds no state between calls.
package dryrun

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"slipway.dev/slipway/internal/kube"
	"slipway.dev/slipway/internal/parallel"
	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/spec"
)

// Applier is what a dry run asks of the cluster; *kube.Client satisfies it.
type Applier interface {
	Apply(ctx context.Context, obj runtime.Object, opts kube.ApplyOptions) (*unstructured.Unstructured, error)
}

var _ Applier = (*kube.Client)(nil)

// Input is what Run dry-runs.
type Input struct {
	Desired       []*unstructured.Unstructured
	Live, Foreign map[plan.Key]*unstructured.Unstructured
	// NewNamespace is the namespace apply creates, "" when it exists.
	NewNamespace string
	ForApply     bool
	// Unchanged, when not nil, receives the objects Subset found unchanged.
	Unchanged map[plan.Key]bool
}

// Run asks the server, with a server-side-apply dry run, about every object apply would
// create or change: what a changed-looking object would become (so that defaults the server
// fills in never show as changes), and whether it refuses one it would create (too large,
// invalid), so that plan fails before apply changes anything. Objects that Subset says are
// unchanged cost no request; objects of that name slipway did not make (Foreign) none either.
// For apply (ForApply), creates in a namespace that does not exist yet (NewNamespace) are
// dry-run one per shape (see groups). The objects Subset found unchanged go to Unchanged, so
// that plan.Compute need not compare them again (at 1,000 nodes the second comparison was
// 5 % of a plan's CPU, issue 17). parallelism bounds the dry runs at a time (at least 8).
func Run(ctx context.Context, kc Applier, parallelism int, in Input) (dry map[plan.Key]*unstructured.Unstructured, immutable map[plan.Key]string, err error) {
	desired, live, foreign, newNS, forApply, unchanged := in.Desired, in.Live, in.Foreign, in.NewNamespace, in.ForApply, in.Unchanged
	var todo []*unstructured.Unstructured
	immutable = map[plan.Key]string{}
	for _, d := range desired {
		k := plan.KeyOf(d)
		if unchanged[k] {
			continue // found unchanged while typed: a stub
		}
		if foreign[k] != nil {
			continue // not slipway's: the plan shows a conflict, apply refuses it
		}
		l := live[k]
		if why := serviceTypeChange(d, l); why != "" {
			immutable[k] = why
			continue
		}
		if l == nil || !plan.Subset(d.Object, l.Object) {
			todo = append(todo, d)
		} else if unchanged != nil {
			unchanged[k] = true
		}
	}
	dr := &dryRuns{kube: kc, parallelism: parallelism, live: live, dry: map[plan.Key]*unstructured.Unstructured{}, immutable: immutable}
	if !forApply || newNS == "" {
		dr.run(ctx, todo)
		return dr.dry, dr.immutable, errors.Join(dr.errs...)
	}
	groups, others := groups(todo, live, newNS)
	first := others
	for _, g := range groups {
		first = append(first, g[0])
	}
	refused := dr.run(ctx, first)
	for _, g := range groups {
		if refused[g[0]] {
			dr.run(ctx, g[1:]) // name every object of a refused shape
		}
	}
	return dr.dry, dr.immutable, errors.Join(dr.errs...)
}

// dryRuns collects the answers of dry runs.
type dryRuns struct {
	kube        Applier
	parallelism int
	live        map[plan.Key]*unstructured.Unstructured
	mu          sync.Mutex
	dry         map[plan.Key]*unstructured.Unstructured
	immutable   map[plan.Key]string
	errs        []error
}

// run dry-runs objs and returns those the server refused.
func (dr *dryRuns) run(ctx context.Context, objs []*unstructured.Unstructured) map[*unstructured.Unstructured]bool {
	refused := map[*unstructured.Unstructured]bool{}
	parallel.ForEach(max(dr.parallelism, 8), objs, func(d *unstructured.Unstructured) {
		out, err := dr.kube.Apply(ctx, d, kube.ApplyOptions{DryRun: true, Force: true})
		dr.mu.Lock()
		defer dr.mu.Unlock()
		switch {
		case err == nil:
			if dr.live[plan.KeyOf(d)] != nil {
				dr.dry[plan.KeyOf(d)] = out
			}
		case kube.IsImmutableFieldError(err):
			dr.immutable[plan.KeyOf(d)] = err.Error()
		case kube.IsNamespaceNotFound(err, d.GetNamespace()):
			// A create in a namespace apply makes first: the server checked what it checks
			// before it looks the namespace up (the request's size, its decoding); the rest
			// it checks when apply creates the object.
		default:
			if node := d.GetLabels()[spec.LabelNode]; node != "" {
				err = fmt.Errorf("node %s: %w", node, err)
			}
			dr.errs = append(dr.errs, err)
			refused[d] = true
		}
	})
	return refused
}

// serviceTypeChange says why a Service must be replaced rather than updated: its type changes
// between LoadBalancer and ClusterIP (a node moves behind the Gateway or away from it), and a
// re-created Service takes no field of the old type along. "" when it does not.
func serviceTypeChange(desired, live *unstructured.Unstructured) string {
	if live == nil || desired.GetKind() != "Service" {
		return ""
	}
	want, _, _ := unstructured.NestedString(desired.Object, "spec", "type")
	have, _, _ := unstructured.NestedString(live.Object, "spec", "type")
	if want == have || have == "" {
		return ""
	}
	return "its type changes from " + have + " to " + want
}
