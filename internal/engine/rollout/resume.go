package rollout

import (
	"context"
	"time"

	appsv1 "k8s.io/api/apps/v1"

	"slipway.dev/slipway/internal/engine/lane"
	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/render"
	"slipway.dev/slipway/internal/state"
	"slipway.dev/slipway/internal/status"
)

// Resume is a node's Deployment that resume scaled up, and how its rollout went.
type Resume struct {
	Rec      lane.Recorder
	Watch    lane.DeploymentWatch
	Node     string
	Key      plan.Key // the node's Deployment
	Replicas int32    // what resume scaled it to
	Limit    time.Duration
	Res      status.Result // of the rollout resume followed
	// Pending: the state says the node's last rollout has not become ready (in flight, or
	// failed with nothing to go back to).
	Pending bool
}

// Resumed records a rollout resume followed as apply records one (Settle): ready is recorded,
// a failure is set back to the last template that became ready. A node that ran ready before
// the suspend keeps its last rollout (a rollback, say) as the state tells it.
func (l *Lane) Resumed(ctx context.Context, r Resume) error {
	w, k, node, res, rec := r.Watch, r.Key, r.Node, r.Res, r.Rec
	o := Outcome{Node: node, Deployment: k.Name, Res: res}
	if dep, _, _, _ := w.Deployment(k.Namespace, k.Name); dep != nil {
		o.Image = render.RunningImage(dep.Spec.Template.Spec.Containers)
		o.Version, _ = render.StateInitVersion(&dep.Spec.Template.Spec)
	}
	switch {
	case res.Phase == status.Ready && !r.Pending:
		// It ran ready before the suspend: its last rollout (a rollback, say) stays what
		// the state tells.
		hash := lane.TemplateHash(w, k)
		return rec.Update(ctx, "after resuming deployment "+k.Name, func(d *state.Document) {
			if hash != "" {
				lane.NodeOf(d, node).ReadyTemplate = hash
			}
		})
	case res.Phase == status.Ready:
		o.Hash = lane.TemplateHash(w, k)
	case ctx.Err() == nil || res.Reason == lane.ReasonStopped:
		readyHash := lane.ReadyTemplate(rec, node)
		if readyHash != "" && readyHash == lane.TemplateHash(w, k) {
			o.NoPrev = "it runs the last template that became ready"
		} else {
			o.Prev = withReplicas(lane.RollbackTarget(w, k, readyHash), r.Replicas)
		}
	}
	return l.Settle(ctx, rec, o, l.env.SetBack(ctx, w, k, r.Limit, node), func() string {
		return l.env.FailureReport(context.WithoutCancel(ctx), w, k, res)
	})
}

// withReplicas is prev, copied, with the replicas resume set: the watch's copy of the
// Deployment may not show resume's scale yet (a stop asked right after it), and setting back
// with the replicas of the suspend would leave the node down.
func withReplicas(prev *appsv1.Deployment, replicas int32) *appsv1.Deployment {
	if prev == nil {
		return nil
	}
	prev = prev.DeepCopy()
	prev.Spec.Replicas = &replicas
	return prev
}
