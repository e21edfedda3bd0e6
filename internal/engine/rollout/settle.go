package rollout

import (
	"context"
	"errors"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"

	"slipway.dev/slipway/internal/engine/lane"
	"slipway.dev/slipway/internal/event"
	"slipway.dev/slipway/internal/render"
	"slipway.dev/slipway/internal/state"
	"slipway.dev/slipway/internal/status"
)

// Outcome is how a followed rollout ended (of apply's await-rollout, or of resume's).
type Outcome struct {
	Node, Deployment string
	Image            string        // the image rolled out
	Res              status.Result // of the rollout
	Hash             string        // its pod-template-hash when Res is Ready
	// Prev is where a failed rollout goes back to; nil when there is none, NoPrev saying why
	// ("" for a first deploy).
	Prev   *appsv1.Deployment
	NoPrev string
	// Version is the state version of the template rolled out (SPEC §6a).
	Version string
}

// Settle records how a rollout ended and, when it failed, sets it back with rollback. A wait
// that was interrupted leaves the in-flight marker: the next apply follows the rollout again.
// A state write that fails fails the run, after the cluster step it records.
func (l *Lane) Settle(ctx context.Context, rec lane.Recorder, o Outcome, rollback lane.SetBack, report func() string) error {
	if o.Res.Phase == status.Ready {
		return l.recordReady(ctx, rec, o)
	}
	if o.Res.Reason == lane.ReasonInterrupted {
		return fmt.Errorf("deployment %s: rollout interrupted; the next apply follows it again: its new template stays applied with nothing to set back to, and the node may not be ready until then", o.Deployment)
	}
	rep := report()
	// The reason word (CrashLoopBackOff, ErrImagePull, NotReady, …) leads: it is what an
	// operator scans for and what `status` shows.
	why := o.Res.Message
	if o.Res.Reason != "" {
		why = o.Res.Reason + ": " + o.Res.Message
	}
	if o.Prev == nil {
		noPrev := o.NoPrev
		if noPrev == "" {
			noPrev = "no earlier template became ready"
		}
		err := fmt.Errorf("deployment %s: rollout failed: %s; nothing to roll back to (%s)%s", o.Deployment, why, noPrev, rep)
		return errors.Join(err, lane.RecordFailed(ctx, rec, o.Node, o.Deployment, o.Image, why))
	}
	oldImage := render.RunningImage(o.Prev.Spec.Template.Spec.Containers)
	// A migration failed: the template set back puts the copy back before its node starts.
	var restore string
	o.Prev, restore = l.o.Migrate.Restoring(rec, o.Node, o.Prev)
	l.env.Emit(event.Event{Node: o.Node, Phase: event.PhaseRollback, Message: fmt.Sprintf("%s: %s; rolling back to %s%s", o.Deployment, o.Res.Reason, lane.DigestOf(oldImage), restore)})
	back, hash, err := rollback(o.Prev)
	if err != nil {
		// The Deployment still has the failed template: the marker stays in flight, and the
		// next apply follows the rollout again.
		return fmt.Errorf("deployment %s: rollout failed (%s) and the rollback failed too: %w%s", o.Deployment, why, err, rep)
	}
	werr := recordRolledBack(ctx, rec, o.Deployment, o.Node, oldImage, hash, why)
	if back.Phase != status.Ready {
		err = fmt.Errorf("deployment %s: rollout failed: %s; rolled back to %s%s, but that did not become ready either: %s%s", o.Deployment, why, lane.DigestOf(oldImage), restore, back.Message, rep)
	} else {
		err = fmt.Errorf("deployment %s: rollout failed: %s; rolled back to %s%s%s", o.Deployment, why, lane.DigestOf(oldImage), restore, rep)
	}
	return errors.Join(err, werr)
}

// recordReady records that o's image, with its pod-template-hash and state version, became
// ready.
func (l *Lane) recordReady(ctx context.Context, rec lane.Recorder, o Outcome) error {
	return rec.Update(ctx, "after the rollout of deployment "+o.Deployment, func(d *state.Document) {
		ns := lane.NodeOf(d, o.Node)
		lane.RunsReady(ns, o.Image, o.Hash)
		l.o.Migrate.RanReady(ns, o.Version)
		ns.LastRollout = lane.RolloutNow(event.RolloutReady, "", o.Image)
	})
}

// recordRolledBack records a rollout set back to oldImage; hash is the template that runs
// again when it became ready ("" otherwise).
func recordRolledBack(ctx context.Context, rec lane.Recorder, deployment, node, oldImage, hash, why string) error {
	return rec.Update(ctx, "after the rollback of deployment "+deployment, func(d *state.Document) {
		ns := lane.NodeOf(d, node)
		lane.RunsReady(ns, oldImage, hash)
		if hash != "" {
			// It ran ready: its state step put the copy back first (or there was none).
			ns.Copy = nil
		}
		ns.LastRollout = lane.RolloutNow(event.RolloutRolledBack, why, oldImage)
	})
}
