package migrate

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"slipway.dev/slipway/internal/engine/lane"
	"slipway.dev/slipway/internal/event"
	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/render"
	"slipway.dev/slipway/internal/state"
)

// removeCopy runs a remove-copy step: once the data is at the step's version (its migration
// ran ready), a Job removes the copy of /var/lib from the node's volume (SPEC §6a). The Job
// runs the state step in mode remove, from the node's image, on the host of the node's pod,
// where the ReadWriteOnce volume is attached; it refuses when the data on the volume is at
// another version. Until it succeeded the state keeps the copy, and the next apply runs it
// again.
func (l *Lane) removeCopy(ctx context.Context, nr *lane.NodeRun, st plan.Step) error {
	cp := copyOf(nr.Rec, st.Node)
	if cp == nil {
		return nil // none held: the rollout put it back, or an earlier run removed it
	}
	kept, _ := st.Payload.(plan.CopyRemoval)
	if v := stateVersion(nr.Rec, st.Node); v != kept.StateVersion || cp.To != v {
		return fmt.Errorf("the copy of /var/lib taken at state version %s stays: the state says the data is at version %s, not %s", state.VersionText(cp.From), state.VersionText(v), state.VersionText(kept.StateVersion))
	}
	ns := nr.Plan.Namespace
	live, _, pods, _ := nr.Watch.Deployment(ns, st.Node)
	if live == nil {
		return fmt.Errorf("deployment %s: not found: the copy of /var/lib stays", st.Node)
	}
	job := render.StateRemovalJob(ns, nr.Plan.Group, st.Node, kept.StateVersion,
		render.RunningImage(live.Spec.Template.Spec.Containers), podHost(pods), &live.Spec.Template.Spec)
	l.env.Emit(event.Event{Node: st.Node, Phase: event.PhaseApply, Message: fmt.Sprintf("removing the copy of /var/lib taken at state version %s (Job %s)", state.VersionText(cp.From), job.Name)})
	if err := l.kube.RunJob(ctx, job, st.Limit); err != nil {
		return fmt.Errorf("removing the copy of /var/lib taken at state version %s: %w; the copy stays and the next apply removes it", state.VersionText(cp.From), err)
	}
	return nr.Rec.Update(ctx, "after Job "+job.Name+" removed the copy of node "+st.Node, func(d *state.Document) {
		lane.NodeOf(d, st.Node).Copy = nil
	})
}

// stateVersion is the version the state says node last ran ready with.
func stateVersion(rec lane.Recorder, node string) string {
	return nodeField(rec, node, func(ns *state.NodeState) string { return ns.StateVersion })
}

// copyOf is the copy of /var/lib the state says node's volume may hold; nil when none.
func copyOf(rec lane.Recorder, node string) *state.StateCopy {
	return nodeField(rec, node, func(ns *state.NodeState) *state.StateCopy {
		if ns.Copy == nil {
			return nil
		}
		c := *ns.Copy
		return &c
	})
}

// nodeField reads, under rec's lock, what f takes from node's state; the zero value when the
// state has no such node.
func nodeField[T any](rec lane.Recorder, node string, f func(*state.NodeState) T) T {
	var out T
	rec.View(func(d *state.Document) {
		if ns := d.Nodes[node]; ns != nil {
			out = f(ns)
		}
	})
	return out
}

// podHost is the host of the node's running pod ("" when none runs: then any host can attach
// the volume).
func podHost(pods []*corev1.Pod) string {
	for _, p := range pods {
		if p.DeletionTimestamp == nil && p.Spec.NodeName != "" && p.Status.Phase == corev1.PodRunning {
			return p.Spec.NodeName
		}
	}
	return ""
}
