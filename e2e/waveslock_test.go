package e2e

// Issue 38: a wave run holds the locks of the groups it changes; another run of the waves
// file, or of one of its groups alone, fails naming the holder, or waits with --lock-timeout
// and goes on once the holder is done.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// lockGroup is one node; {{ENV}} is more of its env, {{TRIAL}} forces a change.
const lockGroup = `group: {{NAME}}
defaults:
  rolloutTimeout: 60s
nodes:
  web:
    image: {rootfs: nodes/web/rootfs}
    init: none
    env: {TRIAL: "{{TRIAL}}"{{ENV}}}
    firewall: {served: [80]}
`

const lockWaves = `groups:
  - {name: first, file: first/slipway.yaml}
  - {name: slow, file: slow/slipway.yaml, dependsOn: [first]}
`

func TestWavesLocks(t *testing.T) {
	t.Parallel()
	g := NewGroup(t, "wl", "group: unused\nnodes: {}\n")
	first, slow := g.Name+"-first", g.Name+"-slow" // group, namespace and state of each
	g.dropNamespaces(first, slow)
	write := func(dir string, trial int, env string) {
		g.WriteFile(dir+"/slipway.yaml", strings.NewReplacer("{{NAME}}", g.Name+"-"+dir, "{{TRIAL}}", fmt.Sprint(trial), "{{ENV}}", env).Replace(lockGroup))
		g.WriteFile(dir+"/nodes/web/rootfs/etc/hostname", "web\n")
	}
	g.WriteFile("waves.yaml", lockWaves)
	write("first", 1, "")
	write("slow", 1, "")
	g.MustRun(0, "apply", "-f", "waves.yaml", "--yes")

	// Run A changes slow only, whose rollout never gets ready: it holds slow's lock until
	// the rollout's limit sets it back.
	write("slow", 2, `, SLIPWAY_DEV_POD: never-ready`)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	a := g.Command(ctx, "apply", "-f", "waves.yaml", "--yes", "-o", "json")
	var aErr bytes.Buffer
	a.Stderr = &aErr
	aOut, err := a.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	waitForLine(t, aOut, func(line string) bool {
		var e waveEvent
		return json.Unmarshal([]byte(line), &e) == nil && e.Group == "slow" && e.Phase == "rollout"
	}, "run A: no rollout event of group slow")
	holder := g.stateOf(slow).Lock
	if holder == nil {
		t.Fatalf("run A waits on slow's rollout, and slow's state is not locked")
	}
	holderText := fmt.Sprintf("pid %d", a.Process.Pid)
	if holder.PID != a.Process.Pid || !strings.Contains(holder.Info, "group slow") {
		t.Errorf("slow's lock is held by pid %d (%s), not by run A (pid %d) for group slow", holder.PID, holder.Info, a.Process.Pid)
	}
	if v := g.stateOf(first).Lock; v != nil {
		t.Errorf("run A holds the lock of first, which it does not change: %+v", v)
	}

	// Another run of the file, and of slow alone: exit 3, naming the holder.
	for _, args := range [][]string{{"apply", "-f", "waves.yaml", "--yes"}, {"apply", "-f", "slow/slipway.yaml", "--yes"}} {
		r := g.MustRun(3, args...)
		for _, want := range []string{"state " + slow + " is locked by", holderText, holder.ID} {
			if !strings.Contains(r.Stderr, want) {
				t.Errorf("slipway %s: no %q in:\n%s", strings.Join(args, " "), want, r)
			}
		}
	}
	if v := g.stateOf(first).Lock; v != nil {
		t.Errorf("the refused run of the waves file left first's lock: %+v", v)
	}

	// Run W, with --lock-timeout, waits for run A and then applies its own change.
	write("slow", 3, "")
	w := g.Command(ctx, "apply", "-f", "waves.yaml", "--yes", "--lock-timeout", "3m")
	var wOut bytes.Buffer
	w.Stdout = &wOut
	wErr, err := w.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	said := waitForLine(t, wErr, func(line string) bool {
		return strings.Contains(line, "is locked by") && strings.Contains(line, "waiting up to")
	}, "run W: no word that it waits for the lock")
	if !strings.Contains(said, holderText) || !strings.Contains(said, slow) {
		t.Errorf("run W waits, but does not name slow's holder %s: %q", holderText, said)
	}
	var exit *exec.ExitError
	if err := a.Wait(); !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("run A: want exit 1 (slow's rollout set back), got %v\nstderr:\n%s", err, aErr.String())
	}
	if err := w.Wait(); err != nil {
		t.Fatalf("run W, after A: %v\nstdout:\n%s", err, wOut.String())
	}
	if !strings.Contains(wOut.String(), "slow: Apply complete") {
		t.Errorf("run W's outcome:\n%s", wOut.String())
	}
	if env := deploymentEnv(t, g, slow, "web", "TRIAL"); env != "3" {
		t.Errorf("after run W, slow's web has TRIAL=%q, want 3", env)
	}
	// A later run: nothing left to do, no lock left.
	g.MustRun(0, "plan", "-f", "waves.yaml", "--detailed-exitcode")
	for _, name := range []string{first, slow} {
		if v := g.stateOf(name).Lock; v != nil {
			t.Errorf("state %s still locked: %+v", name, v)
		}
	}
}

// waitForLine reads r until a line matches and returns it, then drains r in the background
// (the command writing it must not block); it fails the test when r ends first. Its deadline
// is the command's context, which ends r.
func waitForLine(t *testing.T, r io.Reader, match func(string) bool, failure string) string {
	t.Helper()
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		if line := sc.Text(); match(line) {
			go func() { _, _ = io.Copy(io.Discard, r) }()
			return line
		}
	}
	t.Fatal(failure)
	return ""
}
