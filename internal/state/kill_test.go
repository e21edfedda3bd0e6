package state

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"slipway.dev/slipway/internal/kube"
	"slipway.dev/slipway/internal/testkit"
)

// TestMain doubles as a lock-holding helper process: with STATE_TEST_HELPER=lock the test binary
// takes the lock of STATE_TEST_URL / STATE_TEST_GROUP, prints "LOCKED <id>" and waits to be
// killed.
func TestMain(m *testing.M) {
	if os.Getenv("STATE_TEST_HELPER") == "lock" {
		os.Exit(lockHelper())
	}
	os.Exit(m.Run())
}

func lockHelper() int {
	ctx := context.Background()
	var k KubeAccess
	if p := os.Getenv("STATE_TEST_KUBECONFIG"); p != "" {
		c, err := kube.New(p, "")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		k = c
	}
	lease, _ := time.ParseDuration(os.Getenv("STATE_TEST_LEASE"))
	b, err := Open(ctx, os.Getenv("STATE_TEST_URL"), os.Getenv("STATE_TEST_GROUP"), k, WithLeaseDuration(max(lease, time.Second)))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	id, err := b.Lock(ctx, NewInfo("apply"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Printf("LOCKED %s\n", id)
	select {} // until killed
}

// startLockHolder runs the helper and returns its lock ID and process, once it holds the lock.
func startLockHolder(t *testing.T, url, group string, env ...string) (string, *exec.Cmd) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), append([]string{"STATE_TEST_HELPER=lock", "STATE_TEST_URL=" + url, "STATE_TEST_GROUP=" + group}, env...)...)
	cmd.Stderr = os.Stderr
	id := testkit.StartHelper(t, cmd, "LOCKED ")
	return id, cmd
}

// killHolder kills the helper with SIGKILL: no unlock, no cleanup.
func killHolder(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
}

func TestKilledHolderFile(t *testing.T) {
	ctx := context.Background()
	url := "file://" + t.TempDir() + "/k.json"
	id, cmd := startLockHolder(t, url, "k")
	b, err := Open(ctx, url, "k", nil)
	if err != nil {
		t.Fatal(err)
	}
	info, err := b.LockInfo(ctx)
	if err != nil || info == nil || info.ID != id || info.PID != cmd.Process.Pid {
		t.Fatalf("LockInfo = %+v, %v; want lock %s of pid %d", info, err, id, cmd.Process.Pid)
	}
	if l := HolderLiveness(*info); l != LivenessAlive {
		t.Fatalf("liveness of the running holder = %v; want alive", l)
	}
	killHolder(t, cmd)
	// The lock stays: the file backend never guesses that a holder is gone.
	var le *LockError
	if _, err := b.Lock(ctx, NewInfo("apply")); !errors.As(err, &le) || le.Holder.PID != cmd.Process.Pid {
		t.Fatalf("Lock after the kill = %v; want a LockError naming pid %d", err, cmd.Process.Pid)
	}
	info, _ = b.LockInfo(ctx)
	if l := HolderLiveness(*info); l != LivenessDead {
		t.Fatalf("liveness of the killed holder = %v; want dead", l)
	}
	if err := b.Unlock(ctx, id); err != nil {
		t.Fatalf("state unlock: %v", err)
	}
	lid, err := b.Lock(ctx, NewInfo("apply"))
	if err != nil {
		t.Fatalf("Lock after state unlock: %v", err)
	}
	_ = b.Unlock(ctx, lid)
}
