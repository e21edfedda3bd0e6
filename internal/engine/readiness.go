package engine

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"slipway.dev/slipway/internal/engine/lane"
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
func (e *Engine) notReady(ctx context.Context, t Target, live map[plan.Key]plan.Object) (map[string]string, error) {
	var suspects []string
	for _, n := range t.Group.Nodes {
		d := lane.AsTyped[appsv1.Deployment](live[plan.Key{Kind: "Deployment", Namespace: t.Namespace, Name: n.Name}])
		if d == nil {
			continue
		}
		if d.Spec.Replicas != nil && *d.Spec.Replicas == 0 {
			continue // nothing should run; a change of its replicas shows as such
		}
		if !lane.WasReady(d) {
			suspects = append(suspects, n.Name)
		}
	}
	if len(suspects) == 0 {
		return nil, nil
	}
	wl, err := e.o.Kube.ListWorkloads(ctx, t.Namespace, lane.GroupSelector(t.Group.Name))
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
	return status.Rollout(status.Input{Deployment: d, ReplicaSets: rss, Pods: pods, Now: now, Optional: lane.OptionalContainers(d)})
}
