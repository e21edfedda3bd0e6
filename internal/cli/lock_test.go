package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"slipway.dev/slipway/internal/devcluster/devtest"
	"slipway.dev/slipway/internal/event"
	"slipway.dev/slipway/internal/state"
	"slipway.dev/slipway/internal/testkit"
)

// The lock helper process: the test binary re-run with SLIPWAY_LOCK_HELPER set behaves as
// main does (signal.NotifyContext) around withLock, so the tests can signal and kill a real
// process that holds the lock. Modes: "write" writes the state every 50 ms until cancelled,
// then writes a final one (the "current step finishes, the state is written"); "stubborn"
// ignores the cancellation.
func TestLockHelperProcess(t *testing.T) {
	mode := os.Getenv("SLIPWAY_LOCK_HELPER")
	if mode == "" {
		t.Skip("helper process for the lock tests")
	}
	os.Exit(lockHelper(mode, os.Getenv("SLIPWAY_LOCK_HELPER_STATE")))
}

func lockHelper(mode, url string) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	g := &Globals{State: url}
	b, err := openState(ctx, g, "demo", os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	err = withLock(ctx, g, b, "apply", 0, func(ctx context.Context) error {
		doc, err := b.Read(ctx)
		if err != nil {
			return err
		}
		if doc == nil {
			doc = &state.Document{}
		}
		info, _ := b.LockInfo(ctx)
		fmt.Printf("LOCKED %s\n", info.ID)
		for {
			if mode == "stubborn" {
				select {} // deaf to the cancellation: only the second signal ends it
			}
			select {
			case <-ctx.Done():
				doc.Namespace = "finished"
				if err := b.Write(context.WithoutCancel(ctx), doc); err != nil {
					return err
				}
				return ctx.Err()
			case <-time.After(50 * time.Millisecond):
				if err := b.Write(ctx, doc); err != nil {
					return err
				}
			}
		}
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
	}
	return ExitCode(err)
}

// startHelper runs the helper and waits until it holds the lock.
func startHelper(t *testing.T, mode, url string) (*exec.Cmd, string, *syncBuffer) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestLockHelperProcess$")
	cmd.Env = append(os.Environ(), "SLIPWAY_LOCK_HELPER="+mode, "SLIPWAY_LOCK_HELPER_STATE="+url)
	stderr := newSyncBuffer()
	cmd.Stderr = stderr
	id := testkit.StartHelper(t, cmd, "LOCKED ")
	return cmd, id, stderr
}

// syncBuffer is a bytes.Buffer that a test may read, and wait on, while a process or a
// goroutine writes it.
type syncBuffer struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	wrote chan struct{} // a token after each write, for one waiter
}

func newSyncBuffer() *syncBuffer { return &syncBuffer{wrote: make(chan struct{}, 1)} }

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	defer func() {
		select {
		case b.wrote <- struct{}{}:
		default:
		}
	}()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// await returns once b holds text, the writer having reached that point, or an error when
// limit passes first.
func (b *syncBuffer) await(text string, limit time.Duration) error {
	deadline := time.After(limit)
	for !strings.Contains(b.String(), text) {
		select {
		case <-b.wrote:
		case <-deadline:
			return fmt.Errorf("no %q written within %s: got %q", text, limit, b.String())
		}
	}
	return nil
}

func exitCodeOf(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

// runCLI runs the command tree in-process.
func runCLI(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	root := NewRoot()
	var stdout, stderr bytes.Buffer
	root.SetOut(&stdout)
	root.SetErr(&stderr)
	root.SetArgs(args)
	err := root.ExecuteContext(context.Background())
	return stdout.String(), stderr.String(), err
}

func fileState(t *testing.T) (string, state.Backend) {
	url := "file://" + filepath.Join(t.TempDir(), "demo.json")
	b, err := state.Open(context.Background(), url, "demo", nil)
	if err != nil {
		t.Fatal(err)
	}
	return url, b
}

// TestSIGINTReleasesLock: SIGINT during a long operation lets it write its state, then unlocks.
func TestSIGINTReleasesLock(t *testing.T) {
	url, b := fileState(t)
	cmd, _, stderr := startHelper(t, "write", url)
	devtest.WaitFor(t, 10*time.Second, "a few writes of the state", func() (bool, string) {
		doc, err := b.Read(context.Background())
		if err != nil || doc == nil {
			return false, fmt.Sprintf("%v, %v", doc, err)
		}
		return doc.Serial >= 2, fmt.Sprintf("serial %d", doc.Serial)
	})
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	if code := exitCodeOf(err); code != ExitError {
		t.Fatalf("helper exit code %d; want %d (interrupted); stderr: %s", code, ExitError, stderr)
	}
	if !strings.Contains(stderr.String(), "finishing the current step") {
		t.Fatalf("stderr %q; want the interrupt message", stderr)
	}
	ctx := context.Background()
	if info, err := b.LockInfo(ctx); err != nil || info != nil {
		t.Fatalf("lock after SIGINT = %v, %v; want released", info, err)
	}
	doc, err := b.Read(ctx)
	if err != nil || doc == nil || doc.Namespace != "finished" || doc.Serial < 2 {
		t.Fatalf("state after SIGINT = %+v, %v; want the final write", doc, err)
	}
	t.Logf("state after SIGINT: serial %d; helper said: %s", doc.Serial, strings.TrimSpace(stderr.String()))
}

// TestSecondSignalExitsAtOnce: a second SIGINT exits with 130 and leaves the lock, which
// state show names and state unlock removes.
func TestSecondSignalExitsAtOnce(t *testing.T) {
	url, b := fileState(t)
	cmd, id, stderr := startHelper(t, "stubborn", url)
	_ = cmd.Process.Signal(os.Interrupt)
	if err := stderr.await("finishing the current step", 10*time.Second); err != nil {
		t.Fatalf("the first signal: %v", err) // never arrived, or not handled
	}
	_ = cmd.Process.Signal(os.Interrupt)
	err := cmd.Wait()
	if code := exitCodeOf(err); code != 130 {
		t.Fatalf("helper exit code %d; want 130; stderr: %s", code, stderr)
	}
	if !strings.Contains(stderr.String(), "state unlock "+id) {
		t.Fatalf("stderr %q; want it to name `state unlock %s`", stderr, id)
	}
	if info, _ := b.LockInfo(context.Background()); info == nil || info.ID != id {
		t.Fatalf("lock after the second signal = %v; want %s kept", info, id)
	}
	if _, _, err := runCLI(t, "state", "unlock", "--group", "demo", "--state", url, id); err != nil {
		t.Fatal(err)
	}
}

// TestKilledHolder: a holder killed with SIGKILL leaves its lock; state show names it (and that
// its process is gone), a changing verb fails with exit code 3, state unlock frees it.
func TestKilledHolder(t *testing.T) {
	url, b := fileState(t)
	cmd, id, _ := startHelper(t, "write", url)
	pid := cmd.Process.Pid
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()

	out, _, err := runCLI(t, "state", "show", "--group", "demo", "--state", url)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{fmt.Sprintf("(apply, pid %d)", pid), "lock ID " + id, "not running on this host", "state unlock " + id} {
		if !strings.Contains(out, want) {
			t.Errorf("state show:\n%s\nwant %q", out, want)
		}
	}
	t.Logf("state show:\n%s", out)
	jsonOut, _, err := runCLI(t, "state", "show", "--group", "demo", "--state", url, "-o", "json")
	if err != nil || !strings.Contains(jsonOut, `"process": "not running"`) || !strings.Contains(jsonOut, `"ID": "`+id+`"`) {
		t.Fatalf("state show -o json = %s, %v", jsonOut, err)
	}

	g := &Globals{State: url}
	called := false
	err = withLock(context.Background(), g, b, "apply", 0, func(context.Context) error { called = true; return nil })
	if called || ExitCode(err) != ExitLocked || !strings.Contains(err.Error(), fmt.Sprintf("pid %d", pid)) {
		t.Fatalf("withLock on a held lock = %v (exit %d, fn called %v); want exit 3 naming pid %d", err, ExitCode(err), called, pid)
	}

	if _, _, err := runCLI(t, "state", "unlock", "--group", "demo", "--state", url, "not-the-id"); err == nil || !strings.Contains(err.Error(), id) {
		t.Fatalf("state unlock with a wrong ID = %v; want a refusal naming %s", err, id)
	}
	out, _, err = runCLI(t, "state", "unlock", "--group", "demo", "--state", url, id)
	if err != nil || !strings.Contains(out, fmt.Sprintf("pid %d", pid)) || !strings.Contains(out, "unlocked") {
		t.Fatalf("state unlock = %q, %v", out, err)
	}
	if info, _ := b.LockInfo(context.Background()); info != nil {
		t.Fatalf("lock after state unlock: %v", info)
	}
	if err := withLock(context.Background(), g, b, "apply", 0, func(context.Context) error { return nil }); err != nil {
		t.Fatalf("withLock after state unlock: %v", err)
	}
}

func TestWithLockWaits(t *testing.T) {
	ctx := context.Background()
	_, b := fileState(t)
	var buf bytes.Buffer
	lockStderr = &buf
	t.Cleanup(func() { lockStderr = os.Stderr })
	id, err := b.Lock(ctx, state.NewInfo("destroy"))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err = withLock(ctx, nil, b, "apply", 700*time.Millisecond, func(context.Context) error { return nil })
	if ExitCode(err) != ExitLocked || time.Since(start) < 700*time.Millisecond {
		t.Fatalf("withLock timing out = %v after %s; want exit 3 after the timeout", err, time.Since(start))
	}
	// Released once withLock says it waits, so the second attempt cannot take the lock at once.
	waiting := newSyncBuffer()
	lockStderr = waiting
	go func() {
		_ = waiting.await("waiting up to", 10*time.Second) // else the checks below say so
		_ = b.Unlock(ctx, id)
	}()
	ran := false
	if err := withLock(ctx, nil, b, "apply", 10*time.Second, func(context.Context) error { ran = true; return nil }); err != nil || !ran {
		t.Fatalf("withLock waiting for a released lock = %v (ran %v)", err, ran)
	}
	for _, out := range []string{buf.String(), waiting.String()} {
		if !strings.Contains(out, "is locked by") || !strings.Contains(out, "waiting up to") {
			t.Fatalf("stderr %q; want the holder and the wait", out)
		}
	}
	if info, _ := b.LockInfo(ctx); info != nil {
		t.Fatalf("lock left after withLock: %v", info)
	}
}

func TestStateShowAndList(t *testing.T) {
	t.Chdir(t.TempDir())
	ctx := context.Background()
	for _, grp := range []string{"web", "db"} {
		b, err := state.Open(ctx, "file://"+state.DefaultPath(grp), grp, nil)
		if err != nil {
			t.Fatal(err)
		}
		d := &state.Document{Namespace: grp, Nodes: map[string]*state.NodeState{
			"n1": {MachineID: "m-1", Image: state.ImageRecord{Ref: "reg/" + grp + "/n1", Tag: "abc", Digest: "sha256:0123456789abcdef0123"},
				LastRollout: &event.Rollout{Result: event.RolloutReady, Time: time.Date(2026, 7, 1, 0, 0, 0, 0, time.UTC)},
				Roles:       map[string]*state.RoleState{"worker": {MachineID: "m-2", Replicas: 2}}},
		}}
		if err := b.Write(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	out, _, err := runCLI(t, "state", "list")
	if err != nil || out != "db\nweb\n" {
		t.Fatalf("state list = %q, %v", out, err)
	}
	out, _, err = runCLI(t, "state", "list", "-o", "json")
	if err != nil || !strings.Contains(out, `"web"`) {
		t.Fatalf("state list -o json = %q, %v", out, err)
	}
	out, _, err = runCLI(t, "state", "show", "--group", "web")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Lock:      none", "Serial:    1", "reg/web/n1:abc@sha256:0123456789ab", "ready 2026-07-01T00:00:00Z", "worker=2", "m-1"} {
		if !strings.Contains(out, want) {
			t.Errorf("state show:\n%s\nwant %q", out, want)
		}
	}
	if _, _, err := runCLI(t, "state", "show", "-f", "missing.yaml"); err == nil || !strings.Contains(err.Error(), "--group") {
		t.Fatalf("state show without a group = %v; want a hint to --group", err)
	}
	if _, _, err := runCLI(t, "state", "unlock", "--group", "web", "x"); !errors.Is(err, state.ErrNotLocked) {
		t.Fatalf("state unlock of a free group = %v; want ErrNotLocked", err)
	}
	if _, _, err := runCLI(t, "state", "list", "--state", "https://example.invalid/state"); err == nil || !strings.Contains(err.Error(), "cannot list") {
		t.Fatalf("state list on http = %v; want cannot list", err)
	}
}
