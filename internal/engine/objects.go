package engine

import (
	"context"
	"errors"
	"slices"
	"time"

	"slipway.dev/slipway/internal/plan"
)

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
