package spire

// The spire node's script at its edges (issue 43 items 8 to 10): names read back, the
// server's PID and its reconfiguration, the lock, rights after a failed sync, foreign pods.

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Issue 43 item 8: a name read back from the allow directory is never run: one that is no
// account name is a note, left out of k8s_psat.hcl and never deleted through a shell.
func TestLaneReadBackNeverRuns(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, "web")
	p, err := f.lane.Plan(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.lane.Apply(ctx, p.Changes); err != nil {
		t.Fatal(err)
	}
	evil := `demo:node-x"; touch pwned; echo "`
	allow := filepath.Join(f.conf, "k8s_psat.d", uid+"-demo", "demo.allow")
	if err := os.WriteFile(filepath.Join(allow, evil), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(allow, "demo:node-old$(touch pwned2)"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	again, err := f.lane.Plan(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(again.Notes) != 2 || !strings.Contains(again.Notes[0], "no account name") {
		t.Errorf("notes: %q", again.Notes)
	}
	f.lane.Nodes = []string{"api"}
	moved, err := f.lane.Plan(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.lane.Apply(ctx, moved.Changes); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{filepath.Join(f.node.dir, "pwned"), filepath.Join(f.node.dir, "pwned2")} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("a name read back ran: %s exists", p)
		}
	}
	hcl, _ := os.ReadFile(filepath.Join(f.conf, "k8s_psat.hcl"))
	if strings.Contains(string(hcl), "pwned") || !strings.Contains(string(hcl), `["demo:node-api"]`) {
		t.Errorf("k8s_psat.hcl:\n%s", hcl)
	}
}

// Issue 43 item 8: the PID in pidFile must be a spire-server: another process is never
// signalled, and nothing changes on the spire node.
func TestLaneChecksServerPID(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, "web")
	other := exec.Command("sleep", "300")
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = other.Process.Kill(); _ = other.Wait() })
	if err := os.WriteFile(f.lane.Spire.PIDFile, []byte(strconv.Itoa(other.Process.Pid)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := f.lane.Plan(ctx)
	if err != nil {
		t.Fatal(err)
	}
	err = f.lane.Apply(ctx, p.Changes)
	if err == nil || !strings.Contains(err.Error(), "is not a spire-server") {
		t.Fatalf("apply with a pidFile naming sleep: %v, want a refusal", err)
	}
	// The check is synchronous: sleep is alive now, or was killed by the signal.
	if err := other.Process.Signal(syscall.Signal(0)); err != nil {
		t.Error("the process pidFile named was signalled")
	}
	if _, err := os.Stat(filepath.Join(f.conf, "k8s_psat.hcl")); err == nil {
		t.Error("k8s_psat.hcl was written")
	}
	// Issue 43 item 9: the rights this failed sync created are taken back.
	if f.cluster.applied != 1 || f.cluster.deleted != 1 || len(f.cluster.rights) != 0 {
		t.Errorf("rights after the failed sync: applied %d, deleted %d, left %v", f.cluster.applied, f.cluster.deleted, f.cluster.rights)
	}
	if len(f.server.entries) != 0 {
		t.Errorf("entries after the failed sync: %v", f.server.entries)
	}
}

// Issue 43 item 8: a server that logs that it could not take the new file fails the apply.
func TestLaneChecksReconfigured(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, "web")
	dir := t.TempDir()
	pid, _ := startStandin(t, dir, "spire-server", `level=error msg="Failed to reconfigure plugin" error="bad config"`)
	f.lane.Spire.PIDFile = pid
	p, err := f.lane.Plan(ctx)
	if err != nil {
		t.Fatal(err)
	}
	err = f.lane.Apply(ctx, p.Changes)
	if err == nil || !strings.Contains(err.Error(), "did not take the new k8s_psat.hcl") {
		t.Fatalf("apply with a server that failed to reconfigure: %v", err)
	}
}

// Issue 43 item 8: a lock left by a session that died has an owner, and is taken over once
// its lease ran out.
func TestLaneLockLease(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, "web")
	lock := filepath.Join(f.conf, ".k8s_psat.lock")
	if err := os.Mkdir(lock, 0o700); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-(LockLease + 5) * time.Second).Unix()
	_ = os.WriteFile(filepath.Join(lock, "since"), []byte(strconv.FormatInt(old, 10)+"\n"), 0o600)
	_ = os.WriteFile(filepath.Join(lock, "owner"), []byte("deployment gone, session 1\n"), 0o600)
	p, err := f.lane.Plan(ctx)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := f.lane.Apply(ctx, p.Changes); err != nil {
		t.Fatalf("apply beside an expired lock: %v", err)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("took over the expired lock after %s", d)
	}
	if _, err := os.Stat(lock); !os.IsNotExist(err) {
		t.Errorf("the lock stays after the session: %v", err)
	}
}

// Issue 43 item 10: plan names a pod that carries the agent label outside slipway's
// namespaces.
func TestLaneForeignAgentPods(t *testing.T) {
	f := newFixture(t, "web")
	f.cluster.foreignPods = []string{"intruder/squat"}
	p, err := f.lane.Plan(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Notes) != 1 || !strings.Contains(p.Notes[0], "intruder/squat") || !strings.Contains(p.Notes[0], "not slipway's") {
		t.Errorf("notes: %q", p.Notes)
	}
}
