package engine

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	"slipway.dev/slipway/internal/state"
)

// heldLegacy is the old key's state with a lock held as info says (the lock a killed adoption
// left, by whom and until when); Unlock records what it removed.
type heldLegacy struct {
	state.Backend
	info     state.Info
	unlocked []string
}

func (h *heldLegacy) LockInfo(context.Context) (*state.Info, error) { return &h.info, nil }

func (h *heldLegacy) Unlock(_ context.Context, id string) error {
	h.unlocked = append(h.unlocked, id)
	return nil
}

// TestDropStaleAdoptLock: once a target adopted its earlier release's state, the old key's
// lock an adoption left is removed only when it is stale by the lock's own rules: its process
// is gone from this host, or (a holder elsewhere, a kubernetes Lease) its lease ran out. A
// live holder, a lease still running, or another run's lock stays.
func TestDropStaleAdoptLock(t *testing.T) {
	ctx := context.Background()
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	x := newLegacyFixture(t, nil)
	e := x.engine(x.f)
	if _, err := e.adopt(ctx, x.target()); err != nil {
		t.Fatalf("adopt: %v", err)
	}
	adoptAs := adoptOp(x.target())
	for _, tc := range []struct {
		name    string
		info    state.Info
		removed bool
	}{
		{"lease ran out, holder elsewhere", state.Info{ID: "a", Operation: adoptAs, Who: "ops@elsewhere", PID: 7, Expires: time.Now().Add(-time.Minute)}, true},
		{"lease running, holder elsewhere", state.Info{ID: "b", Operation: adoptAs, Who: "ops@elsewhere", PID: 7, Expires: time.Now().Add(time.Hour)}, false},
		{"process gone from this host", state.Info{ID: "c", Operation: adoptAs, Who: "ops@" + host, PID: gone.Process.Pid}, true},
		{"process running on this host", state.Info{ID: "d", Operation: adoptAs, Who: "ops@" + host, PID: os.Getpid()}, false},
		{"holder elsewhere, no lease", state.Info{ID: "e", Operation: adoptAs, Who: "ops@elsewhere", PID: 7}, false},
		{"another run's lock, lease ran out", state.Info{ID: "f", Operation: "apply", Who: "ops@elsewhere", PID: 7, Expires: time.Now().Add(-time.Minute)}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &heldLegacy{Backend: x.old, info: tc.info}
			tg := x.target()
			tg.Legacy = h
			if err := e.dropStaleAdoptLock(ctx, tg); err != nil {
				t.Fatalf("dropStaleAdoptLock: %v", err)
			}
			if got := len(h.unlocked) == 1 && h.unlocked[0] == tc.info.ID; got != tc.removed || len(h.unlocked) > 1 {
				t.Errorf("unlocked %q; want lock %s removed: %v", h.unlocked, tc.info.ID, tc.removed)
			}
		})
	}
}
