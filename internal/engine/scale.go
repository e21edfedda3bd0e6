package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"

	"slipway.dev/slipway/internal/engine/lane"
	"slipway.dev/slipway/internal/engine/rollout"
	"slipway.dev/slipway/internal/event"
	"slipway.dev/slipway/internal/parallel"
	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/render"
	"slipway.dev/slipway/internal/spec"
	"slipway.dev/slipway/internal/state"
	"slipway.dev/slipway/internal/status"
)

// scaleTarget is one Deployment of the group and the replicas it goes to.
type scaleTarget struct {
	node     string
	key      plan.Key
	replicas int32
}

func (s scaleTarget) isRole() bool { return s.key.Name != s.node }

// Scale sets every Deployment of the group to 0 (suspend) or back to its replicas (resume)
// and waits until done (FR-022). Claims, state and images stay.
//
// Resume rolls each node out as an apply does: it waits for the node's pods, and when they
// do not become ready (a template applied while suspended that never ran, say) it sets the
// Deployment back to the last template that became ready and fails; the node's roles start
// only next to a ready node.
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
	live, err := e.o.Kube.ListManaged(ctx, t.Namespace, lane.GroupSelector(t.Group.Name))
	if err != nil {
		return err
	}
	w, err := e.o.Kube.Watch(ctx, t.Namespace)
	if err != nil {
		return err
	}
	defer w.Stop()
	var targets []scaleTarget
	for k, u := range live {
		if k.Kind != "Deployment" {
			continue
		}
		node := u.GetLabels()[spec.LabelNode]
		want := int32(0)
		if !suspend {
			want = 1
			if role := u.GetLabels()[spec.LabelRole]; role != "" {
				want = 0
				if ns := doc.Nodes[node]; ns != nil && ns.Roles[role] != nil {
					want = ns.Roles[role].Replicas
				} else if n := t.Group.Node(node); n != nil && n.Role(role) != nil {
					want = n.Role(role).Replicas
				}
			}
		}
		targets = append(targets, scaleTarget{node: node, key: k, replicas: want})
	}
	sort.Slice(targets, func(i, j int) bool { return targets[i].key.Name < targets[j].key.Name })
	rec := newRecorder(t.Store, doc)
	if suspend {
		if err := e.suspendLanes(ctx, t, rec); err != nil {
			return err
		}
		err = e.suspend(ctx, rec, w, t, targets)
	} else {
		err = e.resume(ctx, rec, w, t, targets)
	}
	if err == nil {
		verb := "resumed"
		if suspend {
			verb = "suspended"
		}
		e.emit(event.Event{Phase: event.PhaseDone, Message: verb})
	}
	return err
}

// suspend stops roles first, then the nodes, and waits for all. The state says suspended only
// once every Deployment is at 0: a suspend stopped half-way leaves a group the next apply
// brings back up, not one it takes for suspended.
func (e *Engine) suspend(ctx context.Context, rec *recorder, w lane.DeploymentWatch, t Target, targets []scaleTarget) error {
	sort.SliceStable(targets, func(i, j int) bool { return targets[i].isRole() && !targets[j].isRole() })
	var errs []error
	gens := make([]int64, len(targets))
	for i, tg := range targets {
		if err := ctx.Err(); err != nil {
			errs = append(errs, fmt.Errorf("suspend interrupted: %w", err))
			break
		}
		e.emit(event.Event{Node: tg.node, Phase: event.PhaseScale, Message: fmt.Sprintf("%s: 0 replicas", tg.key.Name)})
		gen, err := e.o.Kube.Scale(context.WithoutCancel(ctx), tg.key.Namespace, tg.key.Name, 0)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		gens[i] = gen
	}
	// Wait for all at once: the scaling above does not wait per object.
	for i, tg := range targets {
		res := e.env.Wait(ctx, w, lane.WaitFor{Key: tg.key, MinGen: gens[i], Since: time.Now(), Limit: e.rolloutLimit(t.Group.Node(tg.node)), Node: tg.node, Check: status.ScaledDown})
		if res.Phase != status.Ready {
			errs = append(errs, fmt.Errorf("deployment %s: suspend: %s", tg.key.Name, res.Message))
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	return rec.Update(ctx, "after suspending the group", func(d *state.Document) {
		for _, ns := range d.Nodes {
			ns.Suspended = true
		}
	})
}

// resume marks the group resumed before it changes anything (a resume stopped half-way leaves
// a group the next apply rolls out, not one it scales back down), then per node scales its
// Deployment up, follows the rollout as apply does, and starts its roles next to a ready node.
func (e *Engine) resume(ctx context.Context, rec *recorder, w lane.DeploymentWatch, t Target, targets []scaleTarget) error {
	if err := rec.Update(ctx, "before resuming the group", func(d *state.Document) {
		for _, ns := range d.Nodes {
			ns.Suspended = false
		}
	}); err != nil {
		return err
	}
	byNode := map[string][]scaleTarget{}
	var nodes []string
	for _, tg := range targets {
		if !slices.Contains(nodes, tg.node) {
			nodes = append(nodes, tg.node)
		}
		byNode[tg.node] = append(byNode[tg.node], tg)
	}
	errs := make([]error, len(nodes))
	parallel.ForEach(e.o.Parallelism, parallel.Indexes(len(nodes)), func(i int) {
		err := e.resumeNode(ctx, rec, w, t, nodes[i], byNode[nodes[i]])
		// A node that runs ready is published, even when resume failed: set back to its
		// last ready template, or with a role that did not start (issue 35 item 11).
		if err == nil || (ctx.Err() == nil && readyNow(w, t.Namespace, nodes[i])) {
			err = errors.Join(err, e.resumeLanes(ctx, t, rec, nodes[i]))
		}
		if err != nil {
			errs[i] = &NodeError{Node: nodes[i], Err: err}
			e.emit(event.Event{Node: nodes[i], Phase: event.PhaseFailed, Message: err.Error()})
		}
	})
	return errors.Join(errs...)
}

// readyNow reports whether node's own Deployment has all its pods ready on its current
// template now, as the watch has it.
func readyNow(w lane.DeploymentWatch, ns, node string) bool {
	dep, rss, pods, evs := w.Deployment(ns, node)
	now := time.Now()
	return dep != nil && status.Rollout(status.Input{Deployment: dep, ReplicaSets: rss, Pods: pods, Events: evs, Now: now, Since: now}).Phase == status.Ready
}

// resumeNode scales node's own Deployment up and follows its rollout, then starts its roles
// next to a ready node.
func (e *Engine) resumeNode(ctx context.Context, rec *recorder, w lane.DeploymentWatch, t Target, node string, targets []scaleTarget) error {
	limit := e.rolloutLimit(t.Group.Node(node))
	var roles []scaleTarget
	for _, tg := range targets {
		if tg.isRole() {
			roles = append(roles, tg)
			continue
		}
		if err := e.resumeRollout(ctx, rec, w, node, tg, limit); err != nil {
			return err // its roles stay at 0, as after a failed rollout
		}
	}
	for _, tg := range roles {
		check := status.Rollout
		if tg.replicas == 0 {
			check = status.ScaledDown
		}
		res, err := e.resumeScale(ctx, w, "role deployment", node, tg, limit, check, lane.StopEnds)
		if err != nil {
			return err
		}
		if res.Phase != status.Ready {
			return fmt.Errorf("deployment %s: resume: %s", tg.key.Name, res.Message)
		}
	}
	return nil
}

// resumeScale scales one Deployment of node (what names its kind in an interruption) to its
// replicas and waits until check says how that went.
func (e *Engine) resumeScale(ctx context.Context, w lane.DeploymentWatch, what, node string, tg scaleTarget, limit time.Duration, check func(status.Input) status.Result, onStop lane.StopAction) (status.Result, error) {
	if err := ctx.Err(); err != nil {
		return status.Result{}, fmt.Errorf("resume interrupted before %s %s: %w", what, tg.key.Name, err)
	}
	e.emit(event.Event{Node: node, Phase: event.PhaseScale, Message: fmt.Sprintf("%s: %d replicas", tg.key.Name, tg.replicas), Desired: tg.replicas})
	since := time.Now()
	gen, err := e.o.Kube.Scale(context.WithoutCancel(ctx), tg.key.Namespace, tg.key.Name, tg.replicas)
	if err != nil {
		return status.Result{}, err
	}
	f := lane.WaitFor{Key: tg.key, MinGen: gen, Since: since, Limit: limit, Node: node, Check: check, OnStop: onStop}
	if onStop == lane.StopSetsBack {
		f.StopText = ": setting it back to its last ready template; the run stops after that"
	}
	return e.env.Wait(ctx, w, f), nil
}

// resumeRollout scales a node's Deployment up and follows it as apply follows a rollout
// (rollout.Lane.Resumed). A stop asked (the first Ctrl-C) sets a rollout that is not ready
// back at once, as apply does (issue 35 item 14): a node resumed is never left on a template
// that is not ready.
func (e *Engine) resumeRollout(ctx context.Context, rec *recorder, w lane.DeploymentWatch, node string, tg scaleTarget, limit time.Duration) error {
	res, err := e.resumeScale(ctx, w, "deployment", node, tg, limit, status.Rollout, lane.StopSetsBack)
	if err != nil {
		return err
	}
	return e.rollout.Resumed(ctx, rollout.Resume{Rec: rec, Watch: w, Node: node, Key: tg.key, Replicas: tg.replicas, Limit: limit,
		Res: res, Pending: rec.pending(node)})
}

// firstImage is the image a pod of containers cs runs (render.RunningImage).
func firstImage(cs []corev1.Container) string { return render.RunningImage(cs) }
