package lane

import (
	"context"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"slipway.dev/slipway/internal/plan"
)

// lateEvents is a watch whose events arrive one by one, each with a wake-up, as a watch cache
// receives them.
type lateEvents struct {
	mu      sync.Mutex
	evs     []*corev1.Event
	changed chan struct{}
}

func (l *lateEvents) Changed(string) <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.changed
}

func (l *lateEvents) Deployment(string, string) (*appsv1.Deployment, []*appsv1.ReplicaSet, []*corev1.Pod, []*corev1.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return nil, nil, nil, append([]*corev1.Event(nil), l.evs...)
}

func (l *lateEvents) Stop()                                                       {}
func (l *lateEvents) ClaimPhase(string, string) corev1.PersistentVolumeClaimPhase { return "" }

func (l *lateEvents) add(kind, name string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.evs = append(l.evs, &corev1.Event{InvolvedObject: corev1.ObjectReference{Kind: kind, Name: name}})
	close(l.changed)
	l.changed = make(chan struct{})
}

func TestAwaitPodEvents(t *testing.T) {
	k := plan.Key{Kind: "Deployment", Namespace: "ns", Name: "web"}
	for _, tc := range []struct {
		name       string
		already    []string // kinds of the events the watch holds when the report starts
		arrive     []string // kinds of the events that arrive after the report started
		wantEvents int
		grace      time.Duration
	}{
		{name: "the pod's event arrives after the deployment's", arrive: []string{"Deployment", "Pod"}, wantEvents: 2, grace: time.Minute},
		{name: "no event of the pod within the grace", already: []string{"Deployment"}, wantEvents: 1, grace: 50 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := &lateEvents{changed: make(chan struct{})}
			for _, kind := range tc.already {
				w.add(kind, "web")
			}
			done := make(chan []*corev1.Event)
			go func() {
				_, _, _, evs := AwaitPodEvents(context.Background(), w, k, "web-1", tc.grace)
				done <- evs
			}()
			for _, kind := range tc.arrive {
				name := "web"
				if kind == "Pod" {
					name = "web-1"
				}
				w.add(kind, name)
			}
			select {
			case evs := <-done:
				if len(evs) != tc.wantEvents {
					t.Errorf("got %d events, want %d", len(evs), tc.wantEvents)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("AwaitPodEvents did not return")
			}
		})
	}
}
