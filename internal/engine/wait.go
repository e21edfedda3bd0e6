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
	"slipway.dev/slipway/internal/quote"
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
	// onStop is what a stop asked (ctx cancelled: the first Ctrl-C) does (issue 35 item 14):
	// stopEnds (the default: the step changed nothing that the wait must see through) ends
	// the wait as interrupted; stopFinishes goes on until check decides or the limit passes;
	// stopSetsBack ends a wait still progressing with a failure of reason reasonStopped, which
	// the caller sets back. stopText says what follows, in the event that says so once.
	onStop   stopAction
	stopText string
}

// stopAction is what a wait does when a stop is asked.
type stopAction int

const (
	stopEnds stopAction = iota
	stopFinishes
	stopSetsBack
)

const (
	// reasonInterrupted is the reason of a wait a stop ended before its step was done.
	reasonInterrupted = "Interrupted"
	// reasonStopped is the reason of a wait a stop ended, for its step to set back.
	reasonStopped = "Stopped"
)

// waitTick is how often a wait checks again with nothing changed; a variable for the tests.
var waitTick = time.Second

// wait follows f.key in the watch cache until f.check says Ready or Failed, ctx ends, or the
// limit passes.
func (e *Engine) wait(ctx context.Context, w deploymentWatch, f waitFor) status.Result {
	k := f.key
	var last status.Result
	tick := time.NewTicker(waitTick) // time passes even when nothing changes: limits, grace
	defer tick.Stop()
	done := ctx.Done()
	var (
		dep   *appsv1.Deployment
		rss   []*appsv1.ReplicaSet
		pods  []*corev1.Pod
		evs   []*corev1.Event
		fetch = true
	)
	changed := w.Changed(k.Name) // taken before each copy: no change between is missed
	said := false
	for {
		if f.onStop == stopFinishes && !said && ctx.Err() != nil {
			said = true
			e.emit(event.Event{Node: f.node, Phase: event.PhaseRollout, Message: fmt.Sprintf("%s: stop asked: waiting for it to end first (limit %s from its start)%s", k.Name, f.limit, f.stopText)})
		}
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
			Now: time.Now(), Since: f.since, Limit: f.limit, Optional: optionalContainers(dep)})
		if f.node != "" && (res.Ready != last.Ready || res.Desired != last.Desired || res.Phase != last.Phase) {
			e.emit(event.Event{Node: f.node, Phase: event.PhaseRollout, Message: k.Name + ": " + string(res.Phase), Ready: res.Ready, Desired: res.Desired})
		}
		last = res
		if res.Phase != status.Progressing {
			return res
		}
		if f.onStop == stopSetsBack && ctx.Err() != nil {
			e.emit(event.Event{Node: f.node, Phase: event.PhaseRollout, Message: fmt.Sprintf("%s: stop asked before it was ready (%d/%d)%s", k.Name, res.Ready, res.Desired, f.stopText)})
			return status.Result{Phase: status.Failed, Reason: reasonStopped, Pod: res.Pod, Ready: res.Ready, Desired: res.Desired,
				Message: fmt.Sprintf("a stop was asked (Ctrl-C or SIGTERM) before the rollout was ready (%d/%d ready)", res.Ready, res.Desired)}
		}
		select {
		case <-changed:
			changed, fetch = w.Changed(k.Name), true
		case <-tick.C:
			// The same channel stays: a change the select passed over wakes the next one.
			fetch = false
		case <-done:
			if f.onStop == stopEnds {
				return status.Result{Phase: status.Failed, Reason: reasonInterrupted, Message: k.String() + ": interrupted while waiting for the rollout"}
			}
			done, fetch = nil, true // the loop's next turn does what onStop says
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
			// Each line as the container wrote it, quoted: a log may hold escape codes.
			fmt.Fprintf(&b, "\n  last log lines of pod %s:\n    %s", res.Pod, quote.Lines(logs, "\n    "))
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
