package roles

import (
	"context"
	"errors"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"

	"slipway.dev/slipway/internal/engine/lane"
	"slipway.dev/slipway/internal/event"
	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/spec"
	"slipway.dev/slipway/internal/status"
)

// stopRole runs a stop-role step: the role goes to 0 and its pods go, before the template it
// must match changes (FR-006a).
func (l *Lane) stopRole(ctx context.Context, nr *lane.NodeRun, st plan.Step) error {
	l.env.Emit(event.Event{Node: st.Node, Phase: event.PhaseStopRoles, Message: "role " + st.Role + ": to 0 replicas before the image changes"})
	if err := l.scaleAndWait(ctx, nr.Watch, *st.Object, 0); err != nil {
		return fmt.Errorf("role %s: stop: %w", st.Role, err)
	}
	return nil
}

// startRole runs a start-role step: the role's Deployment applied at its replicas and waited
// for; a role that does not become ready goes back to 0, and the node keeps its new image. A
// role rolled without a stop (the step's Rollback: no new image, issue 43) goes back to the
// template it ran ready before the apply instead, and stays up.
func (l *Lane) startRole(ctx context.Context, nr *lane.NodeRun, st plan.Step) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("interrupted before starting role %s: %w", st.Role, err)
	}
	k := *st.Object
	var prev *appsv1.Deployment
	if st.Rollback == plan.RollbackLastReady {
		// Read before the apply: the live template when it runs ready. None (an earlier run
		// left it not ready): a failure goes back to 0 as for a stopped role.
		prev = lane.RollbackTarget(nr.Watch, k, "")
	}
	l.env.Emit(event.Event{Node: st.Node, Phase: event.PhaseStartRoles, Message: fmt.Sprintf("role %s: %d replicas", st.Role, st.Replicas), Desired: st.Replicas})
	gen, err := l.env.Apply(context.WithoutCancel(ctx), nr.Object(k))
	if err != nil {
		return fmt.Errorf("role %s: %w", st.Role, err)
	}
	f := lane.WaitFor{Key: k, MinGen: gen, Since: time.Now(), Limit: st.Limit, Node: st.Node, Check: status.Rollout,
		OnStop: lane.StopSetsBack, StopText: ": the role goes back to 0 replicas; the run stops after that"}
	if prev != nil {
		f.StopText = ": setting the role back to its last ready template; the run stops after that"
	}
	res := l.env.Wait(ctx, nr.Watch, f)
	if res.Phase != status.Ready && prev != nil {
		return l.setRoleBack(ctx, nr, st, prev, res)
	}
	if res.Phase != status.Ready {
		// The error says the role is at 0: wait until its pods are gone, and say so when not.
		if err := l.scaleAndWait(context.WithoutCancel(ctx), nr.Watch, k, 0); err != nil {
			return fmt.Errorf("role %s did not become ready (%s), and scaling it back to 0 failed too: %w", st.Role, res.Message, err)
		}
		l.env.Emit(event.Event{Node: st.Node, Phase: event.PhaseStartRoles, Message: "role " + st.Role + ": back to 0 replicas"})
		return fmt.Errorf("role %s did not become ready (%s); it is back at 0 replicas, the node keeps its new image, and the next apply starts it again", st.Role, res.Message)
	}
	return nil
}

// setRoleBack puts a role rolled without a stop back to prev, the template it ran ready
// before this run, and waits for it (with a time budget of its own), after its new template
// did not become ready (res). The role's Deployment then differs from the file: the next plan
// shows the change again, and the next apply tries it again.
func (l *Lane) setRoleBack(ctx context.Context, nr *lane.NodeRun, st plan.Step, prev *appsv1.Deployment, res status.Result) error {
	k := *st.Object
	why := res.Message
	if res.Reason != "" {
		why = res.Reason + ": " + res.Message
	}
	rep := l.env.FailureReport(context.WithoutCancel(ctx), nr.Watch, k, res)
	l.env.Emit(event.Event{Node: st.Node, Phase: event.PhaseRollback, Message: fmt.Sprintf("role %s: %s; setting it back to its last ready template", st.Role, res.Reason)})
	back, _, err := l.env.SetBack(ctx, nr.Watch, k, st.Limit, st.Node)(prev)
	switch {
	case err != nil:
		return fmt.Errorf("role %s did not become ready (%s), and setting it back to its last ready template failed too: %w%s", st.Role, why, err, rep)
	case back.Phase != status.Ready:
		return fmt.Errorf("role %s did not become ready (%s); set back to its last ready template, but that did not become ready either: %s%s", st.Role, why, back.Message, rep)
	}
	return fmt.Errorf("role %s did not become ready (%s); it is back on its last ready template and stays up, and the next apply tries the new one again%s", st.Role, why, rep)
}

// scaleAndWait sets a Deployment's replicas and waits until its pods match (0: all gone).
func (l *Lane) scaleAndWait(ctx context.Context, w lane.DeploymentWatch, k plan.Key, replicas int32) error {
	gen, err := l.kube.Scale(context.WithoutCancel(ctx), k.Namespace, k.Name, replicas)
	if err != nil {
		return err
	}
	check := status.Rollout
	if replicas == 0 {
		check = status.ScaledDown
	}
	res := l.env.Wait(ctx, w, lane.WaitFor{Key: k, MinGen: gen, Since: time.Now(), Limit: spec.DefaultRolloutTimeout, Check: check, OnStop: lane.StopFinishes})
	if res.Phase != status.Ready {
		return errors.New(res.Message)
	}
	return nil
}
