package state_test

import (
	"context"
	"errors"
	"os"
	"testing"

	"slipway.dev/slipway/internal/state"
	"slipway.dev/slipway/internal/state/statetest"
)

// TestMain doubles as a lock-holding helper process (statetest.HelperMain).
func TestMain(m *testing.M) {
	statetest.HelperMain()
	os.Exit(m.Run())
}

func TestKilledHolderFile(t *testing.T) {
	ctx := context.Background()
	url := "file://" + t.TempDir() + "/k.json"
	id, cmd := statetest.StartLockHolder(t, url, "k")
	b, err := state.Open(ctx, url, "k", nil)
	if err != nil {
		t.Fatal(err)
	}
	info, err := b.LockInfo(ctx)
	if err != nil || info == nil || info.ID != id || info.PID != cmd.Process.Pid {
		t.Fatalf("LockInfo = %+v, %v; want lock %s of pid %d", info, err, id, cmd.Process.Pid)
	}
	if l := state.HolderLiveness(*info); l != state.LivenessAlive {
		t.Fatalf("liveness of the running holder = %v; want alive", l)
	}
	statetest.KillHolder(t, cmd)
	// The lock stays: the file backend never guesses that a holder is gone.
	var le *state.LockError
	if _, err := b.Lock(ctx, state.NewInfo("apply")); !errors.As(err, &le) || le.Holder.PID != cmd.Process.Pid {
		t.Fatalf("Lock after the kill = %v; want a LockError naming pid %d", err, cmd.Process.Pid)
	}
	info, _ = b.LockInfo(ctx)
	if l := state.HolderLiveness(*info); l != state.LivenessDead {
		t.Fatalf("liveness of the killed holder = %v; want dead", l)
	}
	if err := b.Unlock(ctx, id); err != nil {
		t.Fatalf("state unlock: %v", err)
	}
	lid, err := b.Lock(ctx, state.NewInfo("apply"))
	if err != nil {
		t.Fatalf("Lock after state unlock: %v", err)
	}
	_ = b.Unlock(ctx, lid)
}
