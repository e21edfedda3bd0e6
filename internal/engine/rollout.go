package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"slipway.dev/slipway/internal/event"
	"slipway.dev/slipway/internal/kube"
	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/render"
	"slipway.dev/slipway/internal/spec"
	"slipway.dev/slipway/internal/state"
	"slipway.dev/slipway/internal/status"
)

// suspendedNote is the in-flight marker's message for a template applied while the group is
// suspended: it has not run, and resume rolls it out.
const suspendedNote = "applied while the group was suspended: resume rolls it out and waits for it"

// rollout applies the node's Deployment and follows it; on failure it sets the Deployment
// back to the last pod template that became ready and fails with the reason (SPEC §6 step 6).
// The state says the rollout is in flight before the Deployment changes, so a run stopped at
// any point leaves a state whose next apply follows it again.
//
// While the group is suspended the template is applied at 0 replicas and nothing runs: the
// state keeps the rollout in flight (nothing became ready) and resume rolls it out.
func (e *Engine) rollout(ctx context.Context, p *plan.Plan, rec *recorder, w deploymentWatch, n *spec.Node, c *plan.Change, obj *unstructured.Unstructured) error {
	k := c.Key
	// The template to go back to: the live one, if it was running ready when we started; else
	// the last one that became ready, still in its ReplicaSet (an earlier apply was killed
	// during a rollout that never became ready).
	prev := rollbackTarget(w, k, rec.readyTemplate(n.Name))
	limit := e.rolloutLimit(n)
	newImage := containerImage(obj, render.ContainerNode)
	templateChanges := c.Action != plan.Update || len(c.Diff) == 0 || diffTouches(c.Diff, "spec.template.")
	if !p.Suspended || templateChanges {
		msg := ""
		if p.Suspended {
			msg = suspendedNote
		}
		if err := rec.inFlight(ctx, n.Name, k.Name, newImage, msg); err != nil {
			return err
		}
	}
	e.emit(event.Event{Node: n.Name, Phase: event.PhaseRollout, Message: fmt.Sprintf("%s %s (limit %s)", c.Action, k, limit), Desired: 1})
	since := time.Now()
	gen, err := e.applyObject(ctx, *c, obj)
	if err != nil {
		return err
	}
	res := e.wait(ctx, w, k, gen, since, limit, n.Name, status.Rollout)
	if p.Suspended {
		if res.Phase != status.Ready && ctx.Err() == nil {
			return fmt.Errorf("deployment %s: at 0 replicas while suspended: %s", k.Name, res.Message)
		}
		return ctx.Err()
	}
	o := rolloutOutcome{node: n.Name, deployment: k.Name, image: newImage, res: res, prev: prev}
	if res.Phase == status.Ready {
		o.hash = templateHash(w, k)
	}
	return e.settle(ctx, rec, o, e.rollbackFunc(ctx, w, k, limit, n.Name), func() string { return e.failureReport(ctx, w, k, res) })
}

// rolloutOutcome is how a followed rollout ended.
type rolloutOutcome struct {
	node, deployment string
	image            string        // the image rolled out
	res              status.Result // of the rollout
	hash             string        // its pod-template-hash when res is Ready
	// prev is where a failed rollout goes back to; nil when there is none, noPrev saying why
	// ("" for a first deploy).
	prev   *appsv1.Deployment
	noPrev string
}

// rollbackFunc sets a Deployment back to prev and waits for it: the outcome, the template
// hash when it became ready, or the error of the apply.
type rollbackFunc func(prev *appsv1.Deployment) (status.Result, string, error)

// rollbackFunc is the rollback of Deployment k, with its own time budget, not what is left of
// the rollout's.
func (e *Engine) rollbackFunc(ctx context.Context, w deploymentWatch, k plan.Key, limit time.Duration, node string) rollbackFunc {
	return func(prev *appsv1.Deployment) (status.Result, string, error) {
		out, err := e.o.Kube.Apply(context.WithoutCancel(ctx), rollbackObject(prev), kube.ApplyOptions{Force: true})
		if err != nil {
			return status.Result{}, "", err
		}
		res := e.wait(context.WithoutCancel(ctx), w, k, out.GetGeneration(), time.Now(), limit, node, status.Rollout)
		hash := ""
		if res.Phase == status.Ready {
			hash = templateHash(w, k)
		}
		return res, hash, nil
	}
}

// settle records how a rollout ended and, when it failed, sets it back with rollback. A run
// interrupted while it waited leaves the in-flight marker: the next apply follows the rollout
// again. A state write that fails fails the run, after the cluster step it records.
func (e *Engine) settle(ctx context.Context, rec *recorder, o rolloutOutcome, rollback rollbackFunc, report func() string) error {
	if o.res.Phase == status.Ready {
		return rec.ready(ctx, o.node, o.deployment, o.image, o.hash)
	}
	if ctx.Err() != nil {
		return fmt.Errorf("deployment %s: rollout interrupted; the next apply follows it again", o.deployment)
	}
	rep := report()
	// The reason word (CrashLoopBackOff, ErrImagePull, NotReady, …) leads: it is what an
	// operator scans for and what `status` shows.
	why := o.res.Message
	if o.res.Reason != "" {
		why = o.res.Reason + ": " + o.res.Message
	}
	if o.prev == nil {
		noPrev := o.noPrev
		if noPrev == "" {
			noPrev = "no earlier template became ready"
		}
		err := fmt.Errorf("deployment %s: rollout failed: %s; nothing to roll back to (%s)%s", o.deployment, why, noPrev, rep)
		return errors.Join(err, rec.failed(ctx, o.node, o.deployment, o.image, why))
	}
	oldImage := firstImage(o.prev.Spec.Template.Spec.Containers)
	e.emit(event.Event{Node: o.node, Phase: event.PhaseRollback, Message: fmt.Sprintf("%s: %s; rolling back to %s", o.deployment, o.res.Reason, digestOf(oldImage))})
	back, hash, err := rollback(o.prev)
	if err != nil {
		// The Deployment still has the failed template: the marker stays in flight, and the
		// next apply follows the rollout again.
		return fmt.Errorf("deployment %s: rollout failed (%s) and the rollback failed too: %w%s", o.deployment, why, err, rep)
	}
	werr := rec.rolledBack(ctx, o.node, o.deployment, oldImage, hash, why)
	if back.Phase != status.Ready {
		err = fmt.Errorf("deployment %s: rollout failed: %s; rolled back to %s, but that did not become ready either: %s%s", o.deployment, why, digestOf(oldImage), back.Message, rep)
	} else {
		err = fmt.Errorf("deployment %s: rollout failed: %s; rolled back to %s%s", o.deployment, why, digestOf(oldImage), rep)
	}
	return errors.Join(err, werr)
}

// inFlight reports whether the state says a rollout of node has not ended.
func inFlight(ns *state.NodeState) bool {
	return ns != nil && ns.LastRollout != nil && ns.LastRollout.Result == event.RolloutInProgress
}
