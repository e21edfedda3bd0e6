package engine

import (
	"context"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"slipway.dev/slipway/internal/plan"
)

// podEventsGrace is how long a failure report waits for the failed pod's own events: a
// rollout can fail (a crash loop seen at its first restart) before the kubelet's and the
// scheduler's events about the pod reach the watch, and the report is the operator's one
// look at why.
const podEventsGrace = 3 * time.Second

// awaitPodEvents returns what the watch holds of Deployment k once it holds at least one event
// of pod, or when grace has passed or ctx ended, whichever comes first.
func awaitPodEvents(ctx context.Context, w deploymentWatch, k plan.Key, pod string, grace time.Duration) (*appsv1.Deployment, []*appsv1.ReplicaSet, []*corev1.Pod, []*corev1.Event) {
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
