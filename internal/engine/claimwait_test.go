package engine

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"slipway.dev/slipway/internal/event"
)

// A new node's Deployment waits for its claim to be bound when the StorageClass binds claims
// as they are made, and goes ahead past the limit; with a class that binds later (or none
// that says), it does not wait at all.
func TestNewNodeWaitsForItsClaim(t *testing.T) {
	for _, tc := range []struct {
		name     string
		bindNow  bool
		bind     bool          // the claim is bound while the Deployment waits
		timeout  time.Duration // --timeout, which bounds the wait
		wantNote bool          // "not bound after": the limit passed
	}{
		{name: "bound while it waits", bindNow: true, bind: true, timeout: time.Minute},
		{name: "never bound: past the limit", bindNow: true, timeout: 300 * time.Millisecond, wantNote: true},
		{name: "bound once the pod is scheduled: no wait", timeout: time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, tgt, f, p := benchFirstPlan(t, 1, true)
			f.BindNow = tc.bindNow
			e.o.Timeout = tc.timeout
			p.Steps = nil // built again by Apply, with this limit
			var notes []string
			e.SetEmit(func(ev event.Event) {
				if strings.Contains(ev.Message, "not bound after") {
					notes = append(notes, ev.Message)
				}
			})
			claimApplied := make(chan struct{})
			f.OnCall = func(call string) {
				if call == "apply PersistentVolumeClaim n000-state" {
					close(claimApplied)
				}
			}
			done := make(chan error, 1)
			go func() { done <- e.Apply(context.Background(), p, tgt) }()
			<-claimApplied
			if tc.bind {
				// Not before the claim is bound: the Deployment has not gone out.
				time.Sleep(50 * time.Millisecond) // give a wrong engine the time to apply it
				if slices.Contains(f.Calls(), "apply Deployment n000") {
					t.Fatalf("the Deployment was applied before its claim was bound: %v", f.Calls())
				}
				f.Bind("n000-state")
			}
			select {
			case err := <-done:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("apply still waits")
			}
			if !slices.Contains(f.Calls(), "apply Deployment n000") {
				t.Errorf("the Deployment was not applied: %v", f.Calls())
			}
			if got := len(notes) > 0; got != tc.wantNote {
				t.Errorf("notes %q, want one: %v", notes, tc.wantNote)
			}
		})
	}
}
