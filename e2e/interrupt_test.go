package e2e

import (
	"bytes"
	"context"
	"strings"
	"syscall"
	"testing"
	"time"
)

// SIGINT during a long rollout: the apply finishes its step (the rollout, not ready, set back
// to the template that ran ready: issue 35 item 14), writes the state, releases the lock and
// exits non-zero; the next apply converges (SPEC §8, issue 5).
func TestApplyInterrupted(t *testing.T) {
	t.Parallel()
	g := NewGroup(t, "sigint", rolloutFile("5m", ""), "web")
	g.MustRun(0, "apply", "--yes")
	before := g.State().State.Serial

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var stderr bytes.Buffer
	cmd := g.applyIntoNeverReady(ctx, &stderr)
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	sent := time.Now()
	err := cmd.Wait()
	if took := time.Since(sent); took > 20*time.Second {
		t.Errorf("apply took %s to stop after SIGINT", took)
	}
	if err == nil {
		t.Fatalf("interrupted apply exited 0:\n%s", stderr.String())
	}
	if !strings.Contains(stderr.String(), "finishing the current step") {
		t.Errorf("stderr does not say what SIGINT does:\n%s", stderr.String())
	}
	// Issue 35 item 14: the stop did not leave web on the template that was not ready: it
	// was set back, at once, to the one that ran ready, and says so.
	if !strings.Contains(stderr.String(), "web: stop asked before it was ready") {
		t.Errorf("stderr does not say the rollout is set back:\n%s", stderr.String())
	}
	if env := roEnv(g.roDeployment("web").Spec.Template.Spec.Containers[0], "SLIPWAY_DEV_POD"); env == "never-ready" {
		t.Errorf("web is left on the never-ready template after SIGINT:\n%s", stderr.String())
	}
	g.roRequireReady("web", 1)
	st := g.State()
	if st.Lock != nil {
		t.Fatalf("lock %s left after SIGINT:\n%s", st.Lock.ID, stderr.String())
	}
	if st.State == nil || st.State.Serial < before {
		t.Fatalf("state after SIGINT: %+v (serial before %d)", st.State, before)
	}

	g.roWriteGroupFile(rolloutFile("5m", ""))
	g.MustRun(0, "apply", "--yes")
	g.MustRun(0, "plan", "--detailed-exitcode")
	g.roRequireReady("web", 1)
	g.roRequireReady("web-worker", 2)
}
