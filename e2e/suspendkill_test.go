package e2e

import (
	"context"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// suspendNodes are the nodes of suspendGroup: enough that a suspend at --parallelism 1 is
// still at work when its first node reaches 0.
var suspendNodes = []string{"a", "b", "c", "d", "e", "f"}

// suspendGroup is six nodes without roles.
var suspendGroup = func() string {
	s := "group: {{GROUP}}\nnodes:\n"
	for _, n := range suspendNodes {
		s += "  " + n + ": {image: {rootfs: nodes/" + n + "/rootfs}, init: none, readiness: {tcp: 8080}}\n"
	}
	return s
}()

// TestSuspendKilled kills a suspend once its first node is at 0 replicas (issue 11's property:
// after any interruption of a suspend, plan never says `No changes.` while a node is not
// Ready, and the next apply brings every node back to Ready; the state does not call the
// group suspended until every node is).
func TestSuspendKilled(t *testing.T) {
	t.Parallel()
	for _, sg := range inflightSignals {
		t.Run(sg.name, func(t *testing.T) {
			t.Parallel()
			g := &inflight{Group: NewGroup(t, "sk-"+sg.name, suspendGroup, suspendNodes...)}
			g.MustRun(0, "apply", "--yes")
			for _, n := range suspendNodes {
				g.roRequireReady(n, 1)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := g.start(ctx, "suspend", "--yes", "--parallelism", "1")
			scaled := func(n string) bool { return *g.roDeployment(n).Spec.Replicas == 0 }
			g.waitFor(ctx, "the suspend scales a first node to 0", func() bool { return slices.ContainsFunc(suspendNodes, scaled) })
			// The suspend may have finished its last node before the signal lands: exiting 0
			// then is right, and the state must say so.
			if sg.sig == syscall.SIGKILL {
				g.killAndUnlock(cmd)
			} else {
				if err := cmd.Process.Signal(sg.sig); err != nil {
					t.Fatal(err)
				}
				_ = cmd.Wait()
				if l := g.State().Lock; l != nil {
					t.Fatalf("lock %s left after %s", l.ID, sg.sig)
				}
			}

			st := g.State().State
			all := true
			for _, n := range suspendNodes {
				all = all && st.Nodes[n].Suspended
			}
			if all && slices.ContainsFunc(suspendNodes, func(n string) bool { return !scaled(n) }) {
				t.Fatalf("state: the group is suspended while a node still runs")
			}
			if all {
				t.Logf("the %s came after the suspend finished", sg.name)
				// The signal came after the suspend finished its last node: nothing was left
				// half-done, and there is nothing to follow.
				return
			}
			p := g.Run("plan", "--detailed-exitcode")
			if p.Code != 2 || strings.Contains(p.Stdout, "No changes.") {
				t.Errorf("plan after an interrupted suspend: want exit 2 and changes, got %s", p)
			}
			g.MustRun(0, "apply", "--yes")
			for _, n := range suspendNodes {
				g.roRequireReady(n, 1)
			}
			if p := g.Run("plan", "--detailed-exitcode"); p.Code != 0 {
				t.Errorf("plan after the apply that followed the interrupted suspend: want exit 0, got %s", p)
			}
		})
	}
}
