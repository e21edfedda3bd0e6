package lane

import (
	"context"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/quote"
	"slipway.dev/slipway/internal/render"
	"slipway.dev/slipway/internal/status"
)

// FailureReport is the recent events of the pod, its ReplicaSet and its Deployment, each under
// the object they are about, and the pod's last log lines, for the operator.
func (env Env) FailureReport(ctx context.Context, w DeploymentWatch, k plan.Key, res status.Result) string {
	dep, rss, pods, evs := AwaitPodEvents(ctx, w, k, res.Pod, PodEventsGrace)
	var b strings.Builder
	if res.Pod != "" {
		for _, g := range status.Events(status.Input{Deployment: dep, ReplicaSets: rss, Pods: pods, Events: evs, Now: time.Now()}, res.Pod, 10) {
			fmt.Fprintf(&b, "\n  events of %s:\n    %s", g.Object, strings.Join(g.Lines, "\n    "))
		}
		container := render.ContainerNode
		for _, p := range pods {
			if p.Name == res.Pod && len(p.Spec.Containers) > 0 {
				container = LogContainer(p)
			}
		}
		if logs := env.PodLogTail(context.WithoutCancel(ctx), k.Namespace, res.Pod, container, 20); logs != "" {
			// Each line as the container wrote it, quoted: a log may hold escape codes.
			fmt.Fprintf(&b, "\n  last log lines of pod %s:\n    %s", res.Pod, quote.Lines(logs, "\n    "))
		}
	}
	return b.String()
}

// LogContainer is the container of p whose log tells why it fails: an init container that
// failed or keeps failing (the state step found too little free space, say), else the first.
func LogContainer(p *corev1.Pod) string {
	for _, cs := range p.Status.InitContainerStatuses {
		if t := cs.State.Terminated; t != nil && t.ExitCode != 0 || cs.State.Waiting != nil && cs.RestartCount > 0 || cs.LastTerminationState.Terminated != nil && cs.LastTerminationState.Terminated.ExitCode != 0 {
			return cs.Name
		}
	}
	return p.Spec.Containers[0].Name
}

// PodEventsGrace is how long a failure report waits for the failed pod's own events: a
// rollout can fail (a crash loop seen at its first restart) before the kubelet's and the
// scheduler's events about the pod reach the watch, and the report is the operator's one
// look at why.
const PodEventsGrace = 3 * time.Second

// AwaitPodEvents returns what the watch holds of Deployment k once it holds at least one event
// of pod, or when grace has passed or ctx ended, whichever comes first.
func AwaitPodEvents(ctx context.Context, w DeploymentWatch, k plan.Key, pod string, grace time.Duration) (*appsv1.Deployment, []*appsv1.ReplicaSet, []*corev1.Pod, []*corev1.Event) {
	deadline := time.NewTimer(grace)
	defer deadline.Stop()
	for {
		changed := w.Changed(k.Name)
		dep, rss, pods, evs := w.Deployment(k.Namespace, k.Name)
		if pod == "" || hasEventOf(evs, pod) {
			return dep, rss, pods, evs
		}
		select {
		case <-changed:
		case <-deadline.C:
			return dep, rss, pods, evs
		case <-ctx.Done():
			return dep, rss, pods, evs
		}
	}
}

func hasEventOf(evs []*corev1.Event, pod string) bool {
	for _, ev := range evs {
		if ev.InvolvedObject.Kind == "Pod" && ev.InvolvedObject.Name == pod {
			return true
		}
	}
	return false
}
