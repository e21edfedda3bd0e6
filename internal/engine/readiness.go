package engine

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	"slipway.dev/slipway/internal/kube"
	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/spec"
	"slipway.dev/slipway/internal/status"
)

// notReady returns the nodes of the file whose live Deployment should run pods but has not
// got them all ready, each with how it stands: plan must not call such a group done, whatever
// the state says (a state write lost, a pod that stopped being ready). The Deployment's status
// clears almost every node for free; only one that looks not ready costs a list of pods, and is
// judged from them as a rollout is (its status lags the pods by a moment after a rollout).
func (e *Engine) notReady(ctx context.Context, t Target, live map[plan.Key]*unstructured.Unstructured) (map[string]string, error) {
	var suspects []string
	for _, n := range t.Group.Nodes {
		u := live[plan.Key{Kind: "Deployment", Namespace: t.Namespace, Name: n.Name}]
		if u == nil {
			continue
		}
		d := rolloutFields(u)
		if d.Spec.Replicas != nil && *d.Spec.Replicas == 0 {
			continue // nothing should run; a change of its replicas shows as such
		}
		if !wasReady(d) {
			suspects = append(suspects, n.Name)
		}
	}
	if len(suspects) == 0 {
		return nil, nil
	}
	wl, err := e.o.Kube.ListWorkloads(ctx, t.Namespace, spec.LabelGroup+"="+t.Group.Name)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	now := time.Now()
	for _, name := range suspects {
		var dep *appsv1.Deployment
		for _, d := range wl.Deployments {
			if d.Name == name {
				dep = d
			}
		}
		res := judge(wl, dep, now)
		if res.Phase == status.Ready {
			continue
		}
		msg := fmt.Sprintf("%d of %d pods ready", res.Ready, res.Desired)
		if res.Reason != "" {
			msg += ": " + res.Reason
		}
		out[name] = msg
	}
	return out, nil
}

// judge is where Deployment d's rollout stands, from the group's workloads. No Since: a status
// read never times a rollout out; it says where it stands. A nil d is absent.
func judge(wl *kube.Workloads, d *appsv1.Deployment, now time.Time) status.Result {
	if d == nil {
		return status.Result{Phase: status.Absent}
	}
	var rss []*appsv1.ReplicaSet
	for _, rs := range wl.ReplicaSets {
		if rs.Labels[spec.LabelName] == d.Name {
			rss = append(rss, rs)
		}
	}
	var pods []*corev1.Pod
	for _, p := range wl.Pods {
		if p.Labels[spec.LabelName] == d.Name {
			pods = append(pods, p)
		}
	}
	return status.Rollout(status.Input{Deployment: d, ReplicaSets: rss, Pods: pods, Now: now})
}

// rolloutFields reads what wasReady looks at of a live Deployment: its generation, replicas
// and status counts. Converting the whole object to its type cost more than the rest of a
// no-op plan's readiness check at 1,000 nodes (issue 17).
func rolloutFields(u *unstructured.Unstructured) *appsv1.Deployment {
	d := &appsv1.Deployment{}
	d.Generation = u.GetGeneration()
	if r, ok, _ := unstructured.NestedInt64(u.Object, "spec", "replicas"); ok {
		d.Spec.Replicas = ptr.To(int32(r))
	}
	st := func(f string) int64 {
		v, _, _ := unstructured.NestedInt64(u.Object, "status", f)
		return v
	}
	d.Status.ObservedGeneration = st("observedGeneration")
	d.Status.UpdatedReplicas = int32(st("updatedReplicas"))
	d.Status.ReadyReplicas = int32(st("readyReplicas"))
	d.Status.Replicas = int32(st("replicas"))
	return d
}
