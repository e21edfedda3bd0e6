package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"

	"slipway.dev/slipway/internal/engine/lane"
	"slipway.dev/slipway/internal/event"
	"slipway.dev/slipway/internal/kube"
	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/spec"
	"slipway.dev/slipway/internal/status"
)

// stopRole runs a stop-role step: the role goes to 0 and its pods go, before the template it
// must match changes (FR-006a).
func (e *Engine) stopRole(ctx context.Context, r *run, st plan.Step) error {
	e.emit(event.Event{Node: st.Node, Phase: event.PhaseStopRoles, Message: "role " + st.Role + ": to 0 replicas before the image changes"})
	if err := e.scaleAndWait(ctx, r.w, *st.Object, 0); err != nil {
		return fmt.Errorf("role %s: stop: %w", st.Role, err)
	}
	return nil
}

// startRole runs a start-role step: the role's Deployment applied at its replicas and waited
// for; a role that does not become ready goes back to 0, and the node keeps its new image. A
// role rolled without a stop (the step's Rollback: no new image, issue 43) goes back to the
// template it ran ready before the apply instead, and stays up.
func (e *Engine) startRole(ctx context.Context, r *run, st plan.Step) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("interrupted before starting role %s: %w", st.Role, err)
	}
	k := *st.Object
	var prev *appsv1.Deployment
	if st.Rollback == plan.RollbackLastReady {
		// Read before the apply: the live template when it runs ready. None (an earlier run
		// left it not ready): a failure goes back to 0 as for a stopped role.
		prev = lane.RollbackTarget(r.w, k, "")
	}
	e.emit(event.Event{Node: st.Node, Phase: event.PhaseStartRoles, Message: fmt.Sprintf("role %s: %d replicas", st.Role, st.Replicas), Desired: st.Replicas})
	out, err := e.o.Kube.Apply(context.WithoutCancel(ctx), r.objs.get(k), kube.ApplyOptions{Force: true})
	if err != nil {
		return fmt.Errorf("role %s: %w", st.Role, err)
	}
	f := lane.WaitFor{Key: k, MinGen: out.GetGeneration(), Since: time.Now(), Limit: st.Limit, Node: st.Node, Check: status.Rollout,
		OnStop: lane.StopSetsBack, StopText: ": the role goes back to 0 replicas; the run stops after that"}
	if prev != nil {
		f.StopText = ": setting the role back to its last ready template; the run stops after that"
	}
	res := e.env.Wait(ctx, r.w, f)
	if res.Phase != status.Ready && prev != nil {
		return e.setRoleBack(ctx, r, st, prev, res)
	}
	if res.Phase != status.Ready {
		// The error says the role is at 0: wait until its pods are gone, and say so when not.
		if err := e.scaleAndWait(context.WithoutCancel(ctx), r.w, k, 0); err != nil {
			return fmt.Errorf("role %s did not become ready (%s), and scaling it back to 0 failed too: %w", st.Role, res.Message, err)
		}
		e.emit(event.Event{Node: st.Node, Phase: event.PhaseStartRoles, Message: "role " + st.Role + ": back to 0 replicas"})
		return fmt.Errorf("role %s did not become ready (%s); it is back at 0 replicas, the node keeps its new image, and the next apply starts it again", st.Role, res.Message)
	}
	return nil
}

// setRoleBack puts a role rolled without a stop back to prev, the template it ran ready
// before this run, and waits for it (with a time budget of its own), after its new template
// did not become ready (res). The role's Deployment then differs from the file: the next plan
// shows the change again, and the next apply tries it again.
func (e *Engine) setRoleBack(ctx context.Context, r *run, st plan.Step, prev *appsv1.Deployment, res status.Result) error {
	k := *st.Object
	why := res.Message
	if res.Reason != "" {
		why = res.Reason + ": " + res.Message
	}
	rep := e.env.FailureReport(context.WithoutCancel(ctx), r.w, k, res)
	e.emit(event.Event{Node: st.Node, Phase: event.PhaseRollback, Message: fmt.Sprintf("role %s: %s; setting it back to its last ready template", st.Role, res.Reason)})
	back, _, err := e.env.SetBack(ctx, r.w, k, st.Limit, st.Node)(prev)
	switch {
	case err != nil:
		return fmt.Errorf("role %s did not become ready (%s), and setting it back to its last ready template failed too: %w%s", st.Role, why, err, rep)
	case back.Phase != status.Ready:
		return fmt.Errorf("role %s did not become ready (%s); set back to its last ready template, but that did not become ready either: %s%s", st.Role, why, back.Message, rep)
	}
	return fmt.Errorf("role %s did not become ready (%s); it is back on its last ready template and stays up, and the next apply tries the new one again%s", st.Role, why, rep)
}

// scaleAndWait sets a Deployment's replicas and waits until its pods match (0: all gone).
func (e *Engine) scaleAndWait(ctx context.Context, w lane.DeploymentWatch, k plan.Key, replicas int32) error {
	gen, err := e.o.Kube.Scale(context.WithoutCancel(ctx), k.Namespace, k.Name, replicas)
	if err != nil {
		return err
	}
	check := status.Rollout
	if replicas == 0 {
		check = status.ScaledDown
	}
	res := e.env.Wait(ctx, w, lane.WaitFor{Key: k, MinGen: gen, Since: time.Now(), Limit: spec.DefaultRolloutTimeout, Check: check, OnStop: lane.StopFinishes})
	if res.Phase != status.Ready {
		return errors.New(res.Message)
	}
	return nil
}
