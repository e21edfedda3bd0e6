package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"

	"slipway.dev/slipway/internal/engine/lane"
	"slipway.dev/slipway/internal/event"
	"slipway.dev/slipway/internal/kube"
	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/render"
	"slipway.dev/slipway/internal/state"
	"slipway.dev/slipway/internal/status"
)

// suspendedNote is the in-flight marker's message for a template applied while the group is
// suspended: it has not run, and resume rolls it out.
const suspendedNote = "applied while the group was suspended: resume rolls it out and waits for it"

// applyDeployment runs an apply-deployment step: it finds where a failed rollout goes back to
// (the step's Rollback), records the rollout in flight before the Deployment changes, so a run
// stopped at any point leaves a state whose next apply follows it again, and applies it. The
// await-rollout step that follows waits for it (SPEC §6 steps 5–6).
//
// While the group is suspended the template is applied at 0 replicas and nothing runs: the
// state keeps the rollout in flight (nothing became ready) and resume rolls it out.
func (e *Engine) applyDeployment(ctx context.Context, nr *nodeRun, st plan.Step) error {
	k := *st.Object
	c := nr.change(k)
	if c == nil {
		return fmt.Errorf("%s: not in the plan's changes", k)
	}
	obj := nr.objs.get(k)
	// Read before the Deployment changes: the live template, if it runs ready now; else the
	// last one that became ready, still in its ReplicaSet (an earlier apply was killed during
	// a rollout that never became ready). The await-rollout step's Rollback says whether a
	// failure goes back to it.
	prev := lane.RollbackTarget(nr.w, k, nr.rec.readyTemplate(st.Node))
	newImage := containerImage(obj, render.ContainerNode)
	templateChanges := c.Action != plan.Update || len(c.Diff) == 0 || diffTouches(c.Diff, "spec.template.")
	if !nr.p.Suspended || templateChanges {
		msg := ""
		if nr.p.Suspended {
			msg = suspendedNote
		}
		if st.Migration != nil {
			if err := nr.rec.migrating(ctx, st.Node, k.Name, st.Migration.To); err != nil {
				return err
			}
		}
		if err := nr.rec.inFlight(ctx, st.Node, k.Name, newImage, msg); err != nil {
			return err
		}
	}
	e.emit(event.Event{Node: st.Node, Phase: event.PhaseRollout, Message: fmt.Sprintf("%s %s (limit %s)", c.Action, k, e.rolloutLimit(nr.node)), Desired: 1})
	since := time.Now()
	gen, err := e.applyObject(ctx, *c, obj)
	if err != nil {
		return err
	}
	lane.Set(&nr.ln.Slots, appliedKey, &appliedRollout{key: k, image: newImage, prev: prev, gen: gen, since: since})
	return nil
}

// appliedKey is the node's slot of the rollout apply-deployment started, for await-rollout.
var appliedKey = lane.NewKey[*appliedRollout]("the rollout apply-deployment started")

// appliedRollout is what apply-deployment hands on to await-rollout.
type appliedRollout struct {
	key   plan.Key
	image string
	prev  *appsv1.Deployment // the last ready template before the apply; nil: none
	gen   int64              // the generation the apply returned
	since time.Time
}

// awaitRollout runs an await-rollout step: it follows the rollout the apply-deployment step
// started and, on failure, sets the Deployment back to the last pod template that became
// ready and fails with the reason (SPEC §6 step 6). At 0 replicas (suspended) it waits for
// nothing to run.
func (e *Engine) awaitRollout(ctx context.Context, nr *nodeRun, st plan.Step) error {
	a := lane.Get(&nr.ln.Slots, appliedKey)
	if a == nil || a.key != *st.Object {
		return fmt.Errorf("%s: await-rollout without its apply-deployment step", *st.Object)
	}
	k, w := a.key, nr.w
	// A stop asked now ends this step as a failure would: set back to the last template that
	// ran ready, so that a Ctrl-C never leaves the node on a template that is not ready
	// (issue 35 item 14). A first deploy has nothing to go back to: it stays in flight.
	f := lane.WaitFor{Key: k, MinGen: a.gen, Since: a.since, Limit: st.Limit, Node: st.Node, Check: status.Rollout}
	if st.Replicas > 0 && st.Rollback != plan.RollbackNone && a.prev != nil {
		f.OnStop, f.StopText = lane.StopSetsBack, ": setting it back to its last ready template; the run stops after that"
	}
	res := e.env.Wait(ctx, w, f)
	if st.Replicas == 0 {
		if res.Phase != status.Ready && ctx.Err() == nil {
			return fmt.Errorf("deployment %s: at 0 replicas while suspended: %s", k.Name, res.Message)
		}
		return ctx.Err()
	}
	o := rolloutOutcome{node: st.Node, deployment: k.Name, image: a.image, res: res, prev: a.prev, version: templateVersion(nr.objs.get(k))}
	if st.Rollback == plan.RollbackNone {
		o.prev = nil // created in this run: nothing ran before it
	}
	if res.Phase == status.Ready {
		o.hash = lane.TemplateHash(w, k)
	}
	rollback := e.withConfigRestored(ctx, nr, podConfigHash(nr.objs.get(k)), e.rollbackFunc(ctx, w, k, st.Limit, st.Node))
	return e.settle(ctx, nr.rec, o, rollback, func() string { return e.env.FailureReport(context.WithoutCancel(ctx), w, k, res) })
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
	// version is the state version of the template rolled out (SPEC §6a).
	version string
}

// rollbackFunc sets a Deployment back to prev and waits for it: the outcome, the template
// hash when it became ready, or the error of the apply.
type rollbackFunc func(prev *appsv1.Deployment) (status.Result, string, error)

// rollbackFunc is the rollback of Deployment k, with its own time budget, not what is left of
// the rollout's.
func (e *Engine) rollbackFunc(ctx context.Context, w lane.DeploymentWatch, k plan.Key, limit time.Duration, node string) rollbackFunc {
	return func(prev *appsv1.Deployment) (status.Result, string, error) {
		out, err := e.o.Kube.Apply(context.WithoutCancel(ctx), rollbackObject(prev), kube.ApplyOptions{Force: true})
		if err != nil {
			return status.Result{}, "", err
		}
		res := e.env.Wait(context.WithoutCancel(ctx), w, lane.WaitFor{Key: k, MinGen: out.GetGeneration(), Since: time.Now(), Limit: limit, Node: node, Check: status.Rollout})
		hash := ""
		if res.Phase == status.Ready {
			hash = lane.TemplateHash(w, k)
		}
		return res, hash, nil
	}
}

// settle records how a rollout ended and, when it failed, sets it back with rollback. A wait
// that was interrupted leaves the in-flight marker: the next apply follows the rollout again.
// A state write that fails fails the run, after the cluster step it records.
func (e *Engine) settle(ctx context.Context, rec *recorder, o rolloutOutcome, rollback rollbackFunc, report func() string) error {
	if o.res.Phase == status.Ready {
		return rec.ready(ctx, o.node, o.deployment, o.image, o.hash, o.version)
	}
	if o.res.Reason == lane.ReasonInterrupted {
		return fmt.Errorf("deployment %s: rollout interrupted; the next apply follows it again: its new template stays applied with nothing to set back to, and the node may not be ready until then", o.deployment)
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
	restore := ""
	if cp := rec.copyOf(o.node); cp != nil {
		// A migration failed: the template set back puts the copy back before its node starts.
		o.prev = withStateRestore(o.prev, cp)
		restore = fmt.Sprintf(" (its init container %s puts back the copy of /var/lib taken at state version %s; the state keeps that version)", render.InitContainerState, versionText(cp.From))
	}
	e.emit(event.Event{Node: o.node, Phase: event.PhaseRollback, Message: fmt.Sprintf("%s: %s; rolling back to %s%s", o.deployment, o.res.Reason, lane.DigestOf(oldImage), restore)})
	back, hash, err := rollback(o.prev)
	if err != nil {
		// The Deployment still has the failed template: the marker stays in flight, and the
		// next apply follows the rollout again.
		return fmt.Errorf("deployment %s: rollout failed (%s) and the rollback failed too: %w%s", o.deployment, why, err, rep)
	}
	werr := rec.rolledBack(ctx, o.node, o.deployment, oldImage, hash, why)
	if back.Phase != status.Ready {
		err = fmt.Errorf("deployment %s: rollout failed: %s; rolled back to %s%s, but that did not become ready either: %s%s", o.deployment, why, lane.DigestOf(oldImage), restore, back.Message, rep)
	} else {
		err = fmt.Errorf("deployment %s: rollout failed: %s; rolled back to %s%s%s", o.deployment, why, lane.DigestOf(oldImage), restore, rep)
	}
	return errors.Join(err, werr)
}

// inFlight reports whether the state says a rollout of node has not ended.
func inFlight(ns *state.NodeState) bool {
	return ns != nil && ns.LastRollout != nil && ns.LastRollout.Result == event.RolloutInProgress
}

// diffTouches reports whether a field diff touches a path that contains part.
func diffTouches(diff []plan.FieldDiff, part string) bool {
	for _, d := range diff {
		if strings.Contains(d.Path, part) {
			return true
		}
	}
	return false
}
