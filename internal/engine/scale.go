package engine

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"slipway.dev/slipway/internal/event"
	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/render"
	"slipway.dev/slipway/internal/status"
)

// Scale sets every Deployment of the group to 0 (suspend) or back to its replicas (resume)
// and waits until done (FR-022). Claims, state and images stay.
func (e *Engine) Scale(ctx context.Context, t Target, suspend bool) error {
	if err := e.Preflight(ctx, t); err != nil {
		return err
	}
	doc, err := readState(ctx, t)
	if err != nil {
		return err
	}
	if doc == nil {
		return fmt.Errorf("group %s: no state: nothing was applied yet", t.Group.Name)
	}
	live, err := e.o.Kube.ListManaged(ctx, t.Namespace, render.LabelGroup+"="+t.Group.Name)
	if err != nil {
		return err
	}
	w, err := e.o.Kube.Watch(ctx, t.Namespace)
	if err != nil {
		return err
	}
	defer w.Stop()
	type target struct {
		node     string
		key      plan.Key
		replicas int32
	}
	var targets []target
	for k, u := range live {
		if k.Kind != "Deployment" {
			continue
		}
		node := u.GetLabels()[render.LabelNode]
		want := int32(0)
		if !suspend {
			want = 1
			if role := u.GetLabels()[render.LabelRole]; role != "" {
				want = 0
				if ns := doc.Nodes[node]; ns != nil && ns.Roles[role] != nil {
					want = ns.Roles[role].Replicas
				} else if n := t.Group.Node(node); n != nil && n.Role(role) != nil {
					want = n.Role(role).Replicas
				}
			}
		}
		targets = append(targets, target{node: node, key: plan.Key(k), replicas: want})
	}
	sort.Slice(targets, func(i, j int) bool { return targets[i].key.Name < targets[j].key.Name })
	// Resume starts each node before its roles, as a rollout does; suspend stops roles first.
	sort.SliceStable(targets, func(i, j int) bool {
		ri, rj := targets[i].key.Name != targets[i].node, targets[j].key.Name != targets[j].node
		if suspend {
			return ri && !rj
		}
		return !ri && rj
	})
	var errs []error
	verb, done := "resume", "resumed"
	if suspend {
		verb, done = "suspend", "suspended"
	}
	gens := make([]int64, len(targets))
	for i, tg := range targets {
		if err := ctx.Err(); err != nil {
			errs = append(errs, err)
			break
		}
		e.emit(event.Event{Node: tg.node, Phase: event.PhaseScale, Message: fmt.Sprintf("%s: %d replicas", tg.key.Name, tg.replicas), Desired: tg.replicas})
		gen, err := e.o.Kube.Scale(context.WithoutCancel(ctx), tg.key.Namespace, tg.key.Name, tg.replicas)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		gens[i] = gen
	}
	// Wait for all at once: the scaling above does not wait per object.
	for i, tg := range targets {
		check := status.Rollout
		if tg.replicas == 0 {
			check = status.ScaledDown
		}
		res := e.wait(ctx, w, tg.key, gens[i], time.Now(), e.rolloutLimit(t.Group.Node(tg.node)), tg.node, check)
		if res.Phase != status.Ready {
			errs = append(errs, fmt.Errorf("deployment %s: %s: %s", tg.key.Name, verb, res.Message))
		}
	}
	for _, ns := range doc.Nodes {
		ns.Suspended = suspend
	}
	if err := t.Store.Write(context.WithoutCancel(ctx), doc); err != nil {
		errs = append(errs, err)
	}
	if len(errs) == 0 {
		e.emit(event.Event{Phase: event.PhaseDone, Message: done})
	}
	return errors.Join(errs...)
}
