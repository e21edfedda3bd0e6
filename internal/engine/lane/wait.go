package lane

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"slipway.dev/slipway/internal/event"
	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/status"
)

// Waiting on a Deployment in the apply's watch, as the rollout, the roles and resume do.

// WaitFor is what Wait follows: Deployment key until check says Ready or Failed, or the limit
// counted from since passes (check decides what the limit means).
type WaitFor struct {
	Key plan.Key
	// minGen is the generation the apply (or scale) returned: until the cache holds it, the
	// status there is of the old object and says nothing about this rollout.
	MinGen int64
	Since  time.Time
	Limit  time.Duration
	Node   string // the node whose rollout events it emits; "" emits none
	Check  func(status.Input) status.Result
	// onStop is what a stop asked (ctx cancelled: the first Ctrl-C) does (issue 35 item 14):
	// StopEnds (the default: the step changed nothing that the wait must see through) ends
	// the wait as interrupted; StopFinishes goes on until check decides or the limit passes;
	// StopSetsBack ends a wait still progressing with a failure of reason ReasonStopped, which
	// the caller sets back. stopText says what follows, in the event that says so once.
	OnStop   StopAction
	StopText string
}

// StopAction is what a wait does when a stop is asked.
type StopAction int

const (
	StopEnds StopAction = iota
	StopFinishes
	StopSetsBack
)

const (
	// ReasonInterrupted is the reason of a wait a stop ended before its step was done.
	ReasonInterrupted = "Interrupted"
	// ReasonStopped is the reason of a wait a stop ended, for its step to set back.
	ReasonStopped = "Stopped"
)

// WaitTick is how often a wait checks again with nothing changed; a variable for the tests.
var WaitTick = time.Second

// Wait follows f.Key in the watch cache until f.Check says Ready or Failed, ctx ends, or the
// limit passes.
func (env Env) Wait(ctx context.Context, w DeploymentWatch, f WaitFor) status.Result {
	k := f.Key
	var last status.Result
	tick := time.NewTicker(WaitTick) // time passes even when nothing changes: limits, grace
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
		if f.OnStop == StopFinishes && !said && ctx.Err() != nil {
			said = true
			env.Emit(event.Event{Node: f.Node, Phase: event.PhaseRollout, Message: fmt.Sprintf("%s: stop asked: waiting for it to end first (limit %s from its start)%s", k.Name, f.Limit, f.StopText)})
		}
		if fetch {
			// A tick with nothing changed checks the same copies at a later time: copying
			// every waiting node's objects once a second was most of what a first apply of
			// 200 nodes spent waiting (issue 17). check only reads them.
			dep, rss, pods, evs = w.Deployment(k.Namespace, k.Name)
			if dep != nil && dep.Generation < f.MinGen {
				dep = nil // not seen yet: progressing until the limit
			}
		}
		res := f.Check(status.Input{Deployment: dep, ReplicaSets: rss, Pods: pods, Events: evs,
			Now: time.Now(), Since: f.Since, Limit: f.Limit, Optional: OptionalContainers(dep)})
		if f.Node != "" && (res.Ready != last.Ready || res.Desired != last.Desired || res.Phase != last.Phase) {
			env.Emit(event.Event{Node: f.Node, Phase: event.PhaseRollout, Message: k.Name + ": " + string(res.Phase), Ready: res.Ready, Desired: res.Desired})
		}
		last = res
		if res.Phase != status.Progressing {
			return res
		}
		if f.OnStop == StopSetsBack && ctx.Err() != nil {
			env.Emit(event.Event{Node: f.Node, Phase: event.PhaseRollout, Message: fmt.Sprintf("%s: stop asked before it was ready (%d/%d)%s", k.Name, res.Ready, res.Desired, f.StopText)})
			return status.Result{Phase: status.Failed, Reason: ReasonStopped, Pod: res.Pod, Ready: res.Ready, Desired: res.Desired,
				Message: fmt.Sprintf("a stop was asked (Ctrl-C or SIGTERM) before the rollout was ready (%d/%d ready)", res.Ready, res.Desired)}
		}
		select {
		case <-changed:
			changed, fetch = w.Changed(k.Name), true
		case <-tick.C:
			// The same channel stays: a change the select passed over wakes the next one.
			fetch = false
		case <-done:
			if f.OnStop == StopEnds {
				return status.Result{Phase: status.Failed, Reason: ReasonInterrupted, Message: k.String() + ": interrupted while waiting for the rollout"}
			}
			done, fetch = nil, true // the loop's next turn does what onStop says
		}
	}
}
