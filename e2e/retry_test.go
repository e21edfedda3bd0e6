package e2e

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestFirstDeployFailedIsRetried: a node whose first rollout failed (nothing to roll back
// to) is not "No changes" with the same file: plan shows the rollout again and apply follows
// it again; once the pod is healthy, apply succeeds and plan says No changes.
func TestFirstDeployFailedIsRetried(t *testing.T) {
	t.Parallel()
	failing := strings.Replace(soloGroup, "    init: none\n", "    init: none\n    env: {SLIPWAY_DEV_POD: crashloop}\n", 1)
	g := NewGroup(t, "retry", failing, "solo")
	r := g.MustRun(1, "apply", "--yes", "--timeout", "60s")
	if !strings.Contains(r.Stderr, "rollout failed") {
		t.Fatalf("first apply: want a failed rollout, got %s", r)
	}
	if lr := g.State().State.Nodes["solo"].LastRollout; lr == nil || lr.Result != "failed" {
		t.Fatalf("state after a failed first deploy: want lastRollout failed, got %+v", lr)
	}

	r = g.MustRun(2, "plan", "--detailed-exitcode")
	if !strings.Contains(r.Stdout, "apply tries it again") {
		t.Errorf("plan after a failed first deploy: want the rollout shown again, got %s", r)
	}
	if diff := cmp.Diff([]string{"solo: update Deployment/solo"}, g.Plan().ChangeLines()); diff != "" {
		t.Errorf("plan -o json after a failed first deploy (-want +got):\n%s", diff)
	}
	r = g.MustRun(1, "apply", "--yes", "--timeout", "60s")
	if !strings.Contains(r.Stderr, "rollout failed") {
		t.Errorf("retried apply: want the rollout followed and failed again, got %s", r)
	}

	g.WriteFile("slipway.yaml", strings.ReplaceAll(soloGroup, "{{GROUP}}", g.Name))
	g.MustRun(0, "apply", "--yes", "--timeout", "60s")
	if lr := g.State().State.Nodes["solo"].LastRollout; lr == nil || lr.Result != "ready" {
		t.Errorf("state after a good apply: want lastRollout ready, got %+v", lr)
	}
	g.MustRun(0, "plan", "--detailed-exitcode")
}
