package engine

import (
	"context"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"slipway.dev/slipway/internal/event"
	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/render"
	"slipway.dev/slipway/internal/status"
)

// waitFor is what wait follows: Deployment key until check says Ready or Failed, or the limit
// counted from since passes (check decides what the limit means).
type waitFor struct {
	key plan.Key
	// minGen is the generation the apply (or scale) returned: until the cache holds it, the
	// status there is of the old object and says nothing about this rollout.
	minGen int64
	since  time.Time
	limit  time.Duration
	node   string // the node whose rollout events it emits; "" emits none
	check  func(status.Input) status.Result
}

// waitTick is how often a wait checks again with nothing changed; a variable for the tests.
var waitTick = time.Second

// wait follows f.key in the watch cache until f.check says Ready or Failed, ctx ends, or the
// limit passes.
func (e *Engine) wait(ctx context.Context, w deploymentWatch, f waitFor) status.Result {
	k := f.key
	var last status.Result
	tick := time.NewTicker(waitTick) // time passes even when nothing changes: limits, grace
	defer tick.Stop()
	var (
		dep   *appsv1.Deployment
		rss   []*appsv1.ReplicaSet
		pods  []*corev1.Pod
		evs   []*corev1.Event
		fetch = true
	)
	changed := w.Changed(k.Name) // taken before each copy: no change between is missed
	for {
		if fetch {
			// A tick with nothing changed checks the same copies at a later time: copying
			// every waiting node's objects once a second was most of what a first apply of
			// 200 nodes spent waiting (issue 17). check only reads them.
			dep, rss, pods, evs = w.Deployment(k.Namespace, k.Name)
			if dep != nil && dep.Generation < f.minGen {
				dep = nil // not seen yet: progressing until the limit
			}
		}
		res := f.check(status.Input{Deployment: dep, ReplicaSets: rss, Pods: pods, Events: evs,
			Now: time.Now(), Since: f.since, Limit: f.limit})
		if f.node != "" && (res.Ready != last.Ready || res.Desired != last.Desired || res.Phase != last.Phase) {
			e.emit(event.Event{Node: f.node, Phase: event.PhaseRollout, Message: k.Name + ": " + string(res.Phase), Ready: res.Ready, Desired: res.Desired})
		}
		last = res
		if res.Phase != status.Progressing {
			return res
		}
		select {
		case <-changed:
			changed, fetch = w.Changed(k.Name), true
		case <-tick.C:
			// The same channel stays: a change the select passed over wakes the next one.
			fetch = false
		case <-ctx.Done():
			return status.Result{Phase: status.Failed, Reason: "Interrupted", Message: k.String() + ": interrupted while waiting for the rollout"}
		}
	}
}

// failureReport is the recent events of the pod, its ReplicaSet and its Deployment, each under
// the object they are about, and the pod's last log lines, for the operator.
func (e *Engine) failureReport(ctx context.Context, w deploymentWatch, k plan.Key, res status.Result) string {
	dep, rss, pods, evs := awaitPodEvents(ctx, w, k, res.Pod, podEventsGrace)
	var b strings.Builder
	if res.Pod != "" {
		for _, g := range status.Events(status.Input{Deployment: dep, ReplicaSets: rss, Pods: pods, Events: evs, Now: time.Now()}, res.Pod, 10) {
			fmt.Fprintf(&b, "\n  events of %s:\n    %s", g.Object, strings.Join(g.Lines, "\n    "))
		}
		container := render.ContainerNode
		for _, p := range pods {
			if p.Name == res.Pod && len(p.Spec.Containers) > 0 {
				container = logContainer(p)
			}
		}
		if logs := e.o.Kube.PodLogTail(context.WithoutCancel(ctx), k.Namespace, res.Pod, container, 20); logs != "" {
			fmt.Fprintf(&b, "\n  last log lines of pod %s:\n    %s", res.Pod, strings.ReplaceAll(logs, "\n", "\n    "))
		}
	}
	return b.String()
}

// logContainer is the container of p whose log tells why it fails: an init container that
// failed or keeps failing (the state step found too little free space, say), else the first.
func logContainer(p *corev1.Pod) string {
	for _, cs := range p.Status.InitContainerStatuses {
		if t := cs.State.Terminated; t != nil && t.ExitCode != 0 || cs.State.Waiting != nil && cs.RestartCount > 0 || cs.LastTerminationState.Terminated != nil && cs.LastTerminationState.Terminated.ExitCode != 0 {
			return cs.Name
		}
	}
	return p.Spec.Containers[0].Name
}
