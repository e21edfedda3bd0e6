package engine

import (
	"context"
	"fmt"
	"strings"
	"sync"
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

// stopSignalCheck remembers, for one run, whether the cluster keeps a container's stop
// signal: plan and apply (which plans again for a saved plan) ask the cluster once.
type stopSignalCheck struct {
	mu        sync.Mutex
	done      bool
	supported bool
	err       error
	// detect asks the cluster; tests replace it.
	detect func(ctx context.Context, ns string) (bool, error)
}

// stopSignal says whether the group's init: systemd pods get the stop signal SIGRTMIN+3
// (SPEC §5: where the cluster supports container stop signals), and, when they do not, the
// note plan shows once. A live Deployment that carries a stop signal proves support without
// a request; otherwise one server-side dry run decides, in the group's namespace when it
// exists, else in "default".
func (e *Engine) stopSignal(ctx context.Context, g *spec.Group, ns string, live map[plan.Key]plan.Object, nsExists bool) (bool, string) {
	if !hasSystemd(g) {
		return false, ""
	}
	c := &e.stop
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.done {
		switch {
		case keepsStopSignal(live):
			c.supported = true
		default:
			where := ns
			if !nsExists {
				where = "default"
			}
			detect := c.detect
			if detect == nil {
				detect = e.o.Kube.StopSignalSupported
			}
			c.supported, c.err = detect(ctx, where)
		}
		c.done = ctx.Err() == nil
	}
	return stopSignalDecision(c.supported, c.err)
}

// imageStopNote ends the note of a cluster without pod stop signals: the runtime then sends the
// image's own, which slipway sets on the images it builds for init: systemd (an archive's is
// its author's).
const imageStopNote = "they stop with their image's StopSignal (SIGRTMIN+3 in the images slipway builds for them)"

// stopSignalDecision turns what the cluster answered into the render setting and the note.
func stopSignalDecision(supported bool, err error) (bool, string) {
	switch {
	case err != nil:
		return false, fmt.Sprintf("init: systemd pods get no lifecycle.stopSignal: whether the cluster supports container stop signals is unknown (%v); "+imageStopNote, err)
	case !supported:
		return false, "init: systemd pods get no lifecycle.stopSignal, which the cluster drops (its feature gate ContainerStopSignals is off); " + imageStopNote
	}
	return true, ""
}

func hasSystemd(g *spec.Group) bool {
	for _, n := range g.Nodes {
		if n.Init == spec.InitSystemd {
			return true
		}
	}
	return false
}

// keepsStopSignal reports whether a live Deployment has a container with a stop signal: the
// server kept it, so it supports them.
func keepsStopSignal(live map[plan.Key]plan.Object) bool {
	for k, d := range live {
		if k.Kind != "Deployment" {
			continue
		}
		for _, c := range liveContainers(d) {
			if c.Lifecycle != nil && c.Lifecycle.StopSignal != nil && *c.Lifecycle.StopSignal != "" {
				return true
			}
		}
	}
	return false
}

// serviceMonitors says whether the roles that ask for a ServiceMonitor get one: only where
// the cluster serves the Prometheus Operator's kind. When it does not, the note says which
// roles go without and why; nothing fails. An error of discovery fails the plan instead: a
// ServiceMonitor left out for a passing error would be pruned.
func (e *Engine) serviceMonitors(ctx context.Context, g *spec.Group) (bool, string, error) {
	roles := monitoredRoles(g)
	if len(roles) == 0 {
		return false, "", nil
	}
	ok, err := e.o.Kube.ServesKind(ctx, kube.ServiceMonitorKind)
	if err != nil {
		return false, "", err
	}
	if ok {
		return true, "", nil
	}
	return false, fmt.Sprintf("no ServiceMonitor for %s: the cluster has no ServiceMonitor kind (monitoring.coreos.com/v1, the Prometheus Operator's CRD); apply makes them once it has",
		strings.Join(roles, ", ")), nil
}

// monitoredRoles names the roles with serviceMonitor: true, as "role r of node n".
func monitoredRoles(g *spec.Group) []string {
	var out []string
	for _, n := range g.Nodes {
		for _, r := range n.Roles {
			if r.ServiceMonitor && r.Metrics != nil {
				out = append(out, "role "+r.Name+" of node "+n.Name)
			}
		}
	}
	return out
}
