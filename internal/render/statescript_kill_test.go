package render

// StateScript killed after each of its cp, mv and rm calls (as a node's pod is killed): run
// again, it converges, and the rollback gives back the original tree.

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// killer puts stand-ins for cp, mv and rm on PATH that count their calls in the file
// $KILL_COUNTER and kill the script's shell (SIGKILL, as a node's pod is killed) at call number
// $KILL_AT: after the call, or for a cp of several entries, after copying only the first of
// them. Each run counts in a file of its own, so that runs in parallel subtests share the
// stand-ins and nothing else; the count is read with the shell's read, not a cat, since the
// stand-ins run hundreds of times.
func killer(t *testing.T) (dir string) {
	t.Helper()
	dir = t.TempDir()
	for _, name := range []string{"cp", "mv", "rm"} {
		real, err := exec.LookPath(name)
		if err != nil {
			t.Fatal(err)
		}
		body := fmt.Sprintf(`read -r n <"$KILL_COUNTER"; n=$((n + 1)); echo $n >"$KILL_COUNTER"
if [ "$n" = "$KILL_AT" ]; then
	if [ %[1]q = cp ] && [ $# -ge 4 ]; then
		for last; do :; done
		%[2]q -a "$3" "$last"
	else
		%[2]q "$@"
	fi
	kill -KILL $PPID
	exit 1
fi
exec %[2]q "$@"
`, name, real)
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"+body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// killRun runs the state step with the stand-ins of killer in dir, to be killed at call at
// (0: never), and returns how many calls the step made.
func killRun(t *testing.T, dir, root, version string, at int) (out string, calls int, err error) {
	t.Helper()
	counter := filepath.Join(t.TempDir(), "calls")
	if err := os.WriteFile(counter, []byte("0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err = runScript(t, root, "start", version, dir, fmt.Sprintf("KILL_AT=%d", at), "KILL_COUNTER="+counter)
	b, rerr := os.ReadFile(counter)
	if rerr != nil {
		t.Fatal(rerr)
	}
	if _, serr := fmt.Sscan(string(b), &calls); serr != nil {
		t.Fatalf("the stand-ins' count %q: %v", b, serr)
	}
	return out, calls, err
}

// cloneTree copies the tree src, slipway's directory included, to a new directory with cp -a
// (modes, owners, times, hard links and extended attributes kept) and checks that the copy's
// manifest is the original's: a subtest starts from the clone instead of building the tree
// by running the state step again.
func cloneTree(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	if out, err := exec.Command("cp", "-a", "--preserve=all", src+"/.", dst).CombinedOutput(); err != nil {
		t.Fatalf("clone %s: %v\n%s", src, err, out)
	}
	if diff := cmp.Diff(manifest(t, src), manifest(t, dst)); diff != "" {
		t.Fatalf("the clone differs from the tree (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(manifest(t, filepath.Join(src, StateMetaDir)), manifest(t, filepath.Join(dst, StateMetaDir))); diff != "" {
		t.Fatalf("the clone of slipway's directory differs (-want +got):\n%s", diff)
	}
	return dst
}

// TestStateScriptKilledConverges kills the copy, then the restore, after each of their cp, mv
// and rm calls in turn; the step run again (as the restarted pod runs it) converges, and the
// rollback gives back the original tree. The subtests run in parallel and start from clones
// of two trees made once: the data at version 1, and the data migrated at 2 with its copy.
func TestStateScriptKilledConverges(t *testing.T) {
	dir := killer(t)
	// The data at version 1.
	v1 := t.TempDir()
	mustRun(t, v1, "start", "1")
	makeTree(t, v1)
	before := manifest(t, v1)
	// The release at 2 copied it and migrated; how many calls each step makes when nothing
	// kills it.
	v2 := cloneTree(t, v1)
	out, copyCalls, err := killRun(t, dir, v2, "2", 0)
	if err != nil {
		t.Fatalf("copy: %v\n%s", err, out)
	}
	migrate(t, v2)
	probe := cloneTree(t, v2)
	out, restoreCalls, err := killRun(t, dir, probe, "1", 0)
	if err != nil {
		t.Fatalf("restore: %v\n%s", err, out)
	}
	if copyCalls < 3 || restoreCalls < 10 {
		t.Fatalf("the copy made %d calls and the restore %d: the stand-ins are not used", copyCalls, restoreCalls)
	}
	if diff := cmp.Diff(before, manifest(t, probe)); diff != "" {
		t.Fatalf("the restore not killed (-want +got):\n%s", diff)
	}
	killed := func(t *testing.T, root, version string, at int) {
		t.Helper()
		out, _, err := killRun(t, dir, root, version, at)
		if err == nil {
			t.Fatalf("the step at version %s was not killed at call %d:\n%s", version, at, out)
		}
	}
	for at := 1; at <= copyCalls; at++ {
		t.Run(fmt.Sprintf("copy killed at call %d, run again", at), func(t *testing.T) {
			t.Parallel()
			root := cloneTree(t, v1)
			killed(t, root, "2", at)
			mustRun(t, root, "start", "2")
			if v, _ := metaFile(t, root, "version"); v != "2" {
				t.Errorf("version = %q, want 2", v)
			}
			migrate(t, root)
			mustRun(t, root, "start", "1")
			if diff := cmp.Diff(before, manifest(t, root)); diff != "" {
				t.Errorf("after the rollback (-want +got):\n%s", diff)
			}
		})
		t.Run(fmt.Sprintf("copy killed at call %d, rolled back", at), func(t *testing.T) {
			t.Parallel()
			// The new release's container never started: its data is as it was.
			root := cloneTree(t, v1)
			killed(t, root, "2", at)
			mustRun(t, root, "start", "1")
			if diff := cmp.Diff(before, manifest(t, root)); diff != "" {
				t.Errorf("after the rollback (-want +got):\n%s", diff)
			}
			if _, ok := metaFile(t, root, "copy/complete"); ok {
				t.Errorf("a copy is still held after the rollback")
			}
		})
	}
	for at := 1; at <= restoreCalls; at++ {
		t.Run(fmt.Sprintf("restore killed at call %d", at), func(t *testing.T) {
			t.Parallel()
			root := cloneTree(t, v2)
			killed(t, root, "1", at)
			mustRun(t, root, "start", "1")
			if diff := cmp.Diff(before, manifest(t, root)); diff != "" {
				t.Errorf("after the restore run again (-want +got):\n%s", diff)
			}
			if v, _ := metaFile(t, root, "version"); v != "1" {
				t.Errorf("version = %q, want 1", v)
			}
		})
	}
}
