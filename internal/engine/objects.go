package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"slipway.dev/slipway/internal/kube"
	"slipway.dev/slipway/internal/plan"
)

// applyObjects runs an apply-objects step: the group's namespace and default-deny policy, or
// a node's policies, account, claim and Services, in the plan's order.
func (e *Engine) applyObjects(ctx context.Context, r *run, st plan.Step) error {
	for _, k := range st.Objects {
		c := r.change(k)
		if c == nil {
			return fmt.Errorf("%s: not in the plan's changes", k)
		}
		if err := e.applyChange(ctx, *c, r.objs.get(k)); err != nil {
			return err
		}
	}
	return nil
}

// changesOf are the plan's changes of keys, in their order.
func changesOf(r *run, keys []plan.Key) []plan.Change {
	var cs []plan.Change
	for _, k := range keys {
		if c := r.change(k); c != nil {
			cs = append(cs, *c)
		}
	}
	return cs
}

// applyChange creates, updates or replaces one object (not a delete).
func (e *Engine) applyChange(ctx context.Context, c plan.Change, obj *unstructured.Unstructured) error {
	_, err := e.applyObject(ctx, c, obj)
	return err
}

// applyObject is applyChange returning the object's generation after the apply, which a wait
// must see in its cache before it trusts the status there.
func (e *Engine) applyObject(ctx context.Context, c plan.Change, obj *unstructured.Unstructured) (int64, error) {
	if obj == nil {
		return 0, fmt.Errorf("%s: not in the plan's objects", c.Key)
	}
	ctx = context.WithoutCancel(ctx) // one API call: let it finish
	if c.Action == plan.Replace {
		if err := e.o.Kube.Delete(ctx, c.Key, c.UID); err != nil {
			return 0, err
		}
		if err := e.o.Kube.WaitGone(ctx, c.Key, 2*time.Minute); err != nil {
			return 0, err
		}
	}
	e.writes <- struct{}{}
	out, err := e.o.Kube.Apply(ctx, obj, kube.ApplyOptions{Force: true})
	<-e.writes
	if err != nil {
		return 0, err
	}
	return out.GetGeneration(), nil
}

// deleteAll deletes changes in reverse apply order: Deployments first, the claim last.
func (e *Engine) deleteAll(ctx context.Context, changes []plan.Change) error {
	order := map[string]int{"PodDisruptionBudget": -1, "Deployment": 0, "Service": 1, "PersistentVolumeClaim": 2, "ServiceAccount": 3, "NetworkPolicy": 4}
	cs := slices.Clone(changes)
	slices.SortStableFunc(cs, func(a, b plan.Change) int { return order[a.Key.Kind] - order[b.Key.Kind] })
	var errs []error
	var deleted []plan.Change
	for _, c := range cs {
		if c.Action == plan.Delete {
			err := e.o.Kube.Delete(context.WithoutCancel(ctx), c.Key, c.UID)
			errs = append(errs, err)
			if err == nil {
				deleted = append(deleted, c)
			}
		}
	}
	// Wait until they are gone (a claim goes only after its pod): a node or role added back
	// right after must get a new claim, not the terminating one.
	for _, c := range deleted {
		if err := e.o.Kube.WaitGone(ctx, c.Key, 2*time.Minute); err != nil {
			errs = append(errs, err)
			break
		}
	}
	return errors.Join(errs...)
}
