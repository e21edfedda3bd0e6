package engine

import (
	"context"
	"strings"
	"testing"

	"slipway.dev/slipway/internal/event"
)

// TestStopFinishesTheRollout (issue 35 item 14): a stop asked (the first Ctrl-C cancels the
// run's context) while a rollout is awaited does not leave the node on a template that is not
// ready: a rollout that is not ready then is set back at once, as a failed one; the state says
// which; and the run stops before the next step, naming the steps it left for the next apply.
func TestStopFinishesTheRollout(t *testing.T) {
	for _, tc := range []struct {
		name      string
		image     string
		release   bool // the slow pods become ready after the stop
		wantImage string
		wantLast  string
		wantErr   []string
		wantEvent string
	}{
		{name: "ready after the stop", image: imgSlow, release: true, wantImage: imgSlow, wantLast: event.RolloutReady,
			wantErr: []string{"stopped before 1 of its steps, which the next apply does: start role worker"}},
		{name: "failed when the stop came: set back", image: imgCrash, wantImage: imgA, wantLast: event.RolloutRolledBack,
			wantErr: []string{"rolled back to sha256:a"}},
		{name: "not ready when the stop came: set back", image: imgHang, wantImage: imgA, wantLast: event.RolloutRolledBack,
			wantErr:   []string{"rollout failed: Stopped: a stop was asked (Ctrl-C or SIGTERM) before the rollout was ready (0/1 ready)", "rolled back to sha256:a"},
			wantEvent: "web: stop asked before it was ready (0/1): setting it back to its last ready template; the run stops after that"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newApplyRun(t, imgA)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			r.f.OnCall = func(call string) {
				if call == "apply Deployment web" {
					cancel()
					if tc.release {
						r.f.Release()
					}
				}
			}
			err := r.apply(ctx, tc.image, tc.image, templateChange("web"), templateChange("web-worker"))
			for _, want := range tc.wantErr {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("apply stopped during the rollout: %v, want an error with %q", err, want)
				}
			}
			if got := r.f.Image("web"); got != tc.wantImage {
				t.Errorf("web runs %s after the stop, want %s", got, tc.wantImage)
			}
			if l := r.last(); l == nil || l.Result != tc.wantLast {
				t.Errorf("last rollout %+v, want %s", l, tc.wantLast)
			}
			said := tc.wantEvent == ""
			for _, ev := range r.events {
				said = said || ev.Message == tc.wantEvent
			}
			if !said {
				t.Errorf("no event says %q: %+v", tc.wantEvent, r.events)
			}
		})
	}
}
