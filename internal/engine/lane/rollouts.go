package lane

import (
	"context"
	"maps"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"slipway.dev/slipway/internal/event"
	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/render"
	"slipway.dev/slipway/internal/spec"
	"slipway.dev/slipway/internal/state"
	"slipway.dev/slipway/internal/status"
)

// What the rollout, the roles and resume record of a rollout, and how they set one back.

// ReadyTemplate is node's last pod-template-hash that became ready.
func ReadyTemplate(rec Recorder, node string) string {
	var h string
	rec.View(func(d *state.Document) {
		if ns := d.Nodes[node]; ns != nil {
			h = ns.ReadyTemplate
		}
	})
	return h
}

// InFlight reports whether the state says a rollout of node has not ended.
func InFlight(ns *state.NodeState) bool {
	return ns != nil && ns.LastRollout != nil && ns.LastRollout.Result == event.RolloutInProgress
}

// RecordInFlight records, before deployment's pod template changes or is scaled up, that a
// rollout of image is in flight: a run stopped before it ends leaves this in the state, and
// the next apply follows the rollout again (waits, rolls back) instead of calling it done.
func RecordInFlight(ctx context.Context, rec Recorder, node, deployment, image, msg string) error {
	return recordLast(ctx, rec, "before the rollout of deployment "+deployment, node, RolloutNow(event.RolloutInProgress, msg, image))
}

// RecordFailed records a rollout of image that failed with nothing set back.
func RecordFailed(ctx context.Context, rec Recorder, node, deployment, image, why string) error {
	return recordLast(ctx, rec, "after the failed rollout of deployment "+deployment, node, RolloutNow(event.RolloutFailed, why, image))
}

// recordLast records node's last rollout; when names the write.
func recordLast(ctx context.Context, rec Recorder, when, node string, ro *event.Rollout) error {
	return rec.Update(ctx, when, func(d *state.Document) { NodeOf(d, node).LastRollout = ro })
}

// RunsReady notes that image is the one to go back to; hash is its pod-template-hash when it
// became ready ("" when it did not, which keeps the last one that did).
func RunsReady(ns *state.NodeState, image, hash string) {
	ns.PreviousReady = image
	if hash != "" {
		ns.ReadyTemplate = hash
	}
}

// RolloutNow is a rollout of image that ended (or is in flight) with result, now.
func RolloutNow(result, msg, image string) *event.Rollout {
	return &event.Rollout{Result: result, Time: time.Now().UTC(), Message: msg, Digest: DigestOf(image)}
}

// SetBack sets a Deployment back to prev and waits for it: the outcome, the template hash
// when it became ready, or the error of the apply.
type SetBack func(prev *appsv1.Deployment) (status.Result, string, error)

// SetBack is the rollback of Deployment k of node, with its own time budget (limit), not
// what is left of the rollout's.
func (env Env) SetBack(ctx context.Context, w DeploymentWatch, k plan.Key, limit time.Duration, node string) SetBack {
	return func(prev *appsv1.Deployment) (status.Result, string, error) {
		gen, err := env.Apply(context.WithoutCancel(ctx), RollbackObject(prev))
		if err != nil {
			return status.Result{}, "", err
		}
		res := env.Wait(context.WithoutCancel(ctx), w, WaitFor{Key: k, MinGen: gen, Since: time.Now(), Limit: limit, Node: node, Check: status.Rollout})
		hash := ""
		if res.Phase == status.Ready {
			hash = TemplateHash(w, k)
		}
		return res, hash, nil
	}
}

// RollbackObject is an apply configuration that puts the previous pod template back, with
// slipway's labels and strategy, so the apply owns exactly what it owned before.
func RollbackObject(prev *appsv1.Deployment) *appsv1.Deployment {
	tmpl := prev.Spec.Template.DeepCopy()
	delete(tmpl.Labels, appsv1.DefaultDeploymentUniqueLabelKey)
	meta := metav1.ObjectMeta{Name: prev.Name, Namespace: prev.Namespace, Labels: maps.Clone(prev.Labels)}
	if h := prev.Annotations[spec.AnnotationAppliedHash]; h != "" {
		// The hash of the object set back: a file back at it is No changes again, a file
		// that still differs is a change (the live one lacks what it sets, or the hash).
		meta.Annotations = map[string]string{spec.AnnotationAppliedHash: h}
	}
	return &appsv1.Deployment{
		TypeMeta:   render.DeploymentTypeMeta,
		ObjectMeta: meta,
		Spec: appsv1.DeploymentSpec{
			Replicas: prev.Spec.Replicas,
			Selector: prev.Spec.Selector,
			Strategy: prev.Spec.Strategy,
			Template: *tmpl,
		},
	}
}
