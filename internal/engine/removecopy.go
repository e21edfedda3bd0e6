package engine

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"slipway.dev/slipway/internal/event"
	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/render"
)

// removeCopy runs a remove-copy step: once the data is at the step's version (its migration
// ran ready), a Job removes the copy of /var/lib from the node's volume (SPEC §6a). The Job
// runs the state step in mode remove, from the node's image, on the host of the node's pod,
// where the ReadWriteOnce volume is attached; it refuses when the data on the volume is at
// another version. Until it succeeded the state keeps the copy, and the next apply runs it
// again.
func (e *Engine) removeCopy(ctx context.Context, nr *nodeRun, st plan.Step) error {
	cp := nr.rec.copyOf(st.Node)
	if cp == nil {
		return nil // none held: the rollout put it back, or an earlier run removed it
	}
	if v := nr.rec.stateVersion(st.Node); v != st.StateVersion || cp.To != v {
		return fmt.Errorf("the copy of /var/lib taken at state version %s stays: the state says the data is at version %s, not %s", versionText(cp.From), versionText(v), versionText(st.StateVersion))
	}
	live, _, pods, _ := nr.w.Deployment(nr.p.Namespace, st.Node)
	if live == nil {
		return fmt.Errorf("deployment %s: not found: the copy of /var/lib stays", st.Node)
	}
	job := render.StateRemovalJob(nr.p.Namespace, nr.p.Group, st.Node, st.StateVersion,
		firstImage(live.Spec.Template.Spec.Containers), podHost(pods), &live.Spec.Template.Spec)
	e.emit(event.Event{Node: st.Node, Phase: event.PhaseApply, Message: fmt.Sprintf("removing the copy of /var/lib taken at state version %s (Job %s)", versionText(cp.From), job.Name)})
	if err := e.o.Kube.RunJob(ctx, job, st.Limit); err != nil {
		return fmt.Errorf("removing the copy of /var/lib taken at state version %s: %w; the copy stays and the next apply removes it", versionText(cp.From), err)
	}
	return nr.rec.copyRemoved(ctx, st.Node, job.Name)
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
