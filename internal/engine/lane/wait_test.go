package lane

import (
	"context"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"slipway.dev/slipway/internal/event"
	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/status"
)

// countingWatch counts the copies a wait takes of one Deployment's objects.
type countingWatch struct {
	lateEvents
	copies int
}

func (c *countingWatch) Deployment(ns, name string) (*appsv1.Deployment, []*appsv1.ReplicaSet, []*corev1.Pod, []*corev1.Event) {
	c.mu.Lock()
	c.copies++
	c.mu.Unlock()
	return &appsv1.Deployment{}, nil, nil, nil
}

func TestWaitCopiesOnlyWhatChanged(t *testing.T) {
	defer func(d time.Duration) { WaitTick = d }(WaitTick)
	WaitTick = time.Millisecond
	for _, tc := range []struct {
		name       string
		changes    int // wake-ups while it waits
		wantCopies int
	}{
		{"ticks alone check the same copies", 0, 1},
		{"each change is copied once", 2, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := &countingWatch{lateEvents: lateEvents{changed: make(chan struct{})}}
			var mu sync.Mutex
			checks := 0
			done := make(chan struct{})
			check := func(status.Input) status.Result {
				mu.Lock()
				defer mu.Unlock()
				checks++
				// Enough ticks pass between the changes for each to be seen on its own.
				if checks%10 == 5 && checks/10 < tc.changes {
					go w.add("Pod", "web")
				}
				if checks >= 10*tc.changes+20 {
					return status.Result{Phase: status.Ready}
				}
				return status.Result{Phase: status.Progressing}
			}
			go func() {
				defer close(done)
				Env{Emit: func(event.Event) {}}.Wait(context.Background(), w, WaitFor{Key: plan.Key{Kind: "Deployment", Namespace: "ns", Name: "web"}, Check: check})
			}()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("wait did not return")
			}
			w.mu.Lock()
			defer w.mu.Unlock()
			if w.copies != tc.wantCopies {
				t.Errorf("%d copies of the objects over %d checks, want %d", w.copies, checks, tc.wantCopies)
			}
		})
	}
}
