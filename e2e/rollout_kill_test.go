package e2e

// Issue 7: an apply killed in the middle of a rollout, and the next apply that follows it.

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"slipway.dev/slipway/internal/devcluster/devtest"
)

// TestRolloutKilledRolesWaitForTheNode: an apply killed while its node's new pod was not ready
// yet leaves the node's Deployment as desired, its roles stopped and the rollout in flight in
// the state. The next apply follows that rollout as an uninterrupted apply would: it rolls it
// back when it fails, and never starts the roles next to a node that is not ready (SPEC §6
// step 7: roles start after a successful rollout).
func TestRolloutKilledRolesWaitForTheNode(t *testing.T) {
	t.Parallel()
	g := NewGroup(t, "ro-killed", rolloutFile("5m", ""), "web")
	g.MustRun(0, "apply", "--yes")
	roleTemplate := g.roDeployment("web-worker").Spec.Template

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := g.applyIntoNeverReady(ctx, nil)
	g.roAwaitUnreadyPod("web")
	g.killAndUnlock(cmd)

	r := g.MustRun(1, "apply", "--yes", "--timeout", neverReadyLimit)
	wantErr := regexp.MustCompile(`(?m)^error: node web: deployment web: rollout failed: NotReady: pod web-\S+: container node: did not become ready within ` + neverReadyLimit + `: .+; rolled back to sha256:[0-9a-f]{64}$`)
	if !wantErr.MatchString(r.Stderr) {
		t.Errorf("apply after the kill: want the error %s:\n%s", wantErr, r)
	}
	role := g.roDeployment("web-worker")
	if *role.Spec.Replicas != 0 || len(g.roPods("web-worker")) != 0 {
		t.Errorf("role worker: %d replicas, pods %v: want it stopped", *role.Spec.Replicas, roPodNames(g.roPods("web-worker")))
	}
	if diff := cmp.Diff(roleTemplate, role.Spec.Template); diff != "" {
		t.Errorf("role worker: its template changed next to a node that is not ready (-before +after):\n%s", diff)
	}
	if st := g.roState().State.Nodes["web"]; st.LastRollout == nil || st.LastRollout.Result != "rolled-back" || !strings.HasPrefix(st.LastRollout.Message, "NotReady: pod web-") {
		t.Errorf("state: last rollout %+v, want rolled-back with the reason", st.LastRollout)
	}
	g.roRequireReady("web", 1)

	// A good file again: the node rolls out and the roles start.
	g.roWriteGroupFile(rolloutFile("5m", ""))
	g.MustRun(0, "apply", "--yes")
	g.roRequireReady("web", 1)
	g.roRequireReady("web-worker", 2)
}

// An apply killed during a rollout that never becomes ready leaves a live template that was
// never ready; a later bad change must still go back to the last template that was, kept in
// its ReplicaSet, not fail with nothing to roll back to.
func TestRolloutAfterKillRollsBackToLastReady(t *testing.T) {
	t.Parallel()
	g := NewGroup(t, "ro-lastready", rolloutFile("5m", ""), "web")
	g.MustRun(0, "apply", "--yes")
	good := g.roDeployment("web").Spec.Template

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := g.applyIntoNeverReady(ctx, nil)
	g.roAwaitUnreadyPod("web")
	g.killAndUnlock(cmd)

	g.roWriteGroupFile(rolloutFile("5m", "env: {SLIPWAY_DEV_POD: crashloop}"))
	r := g.MustRun(1, "apply", "--yes")
	if !strings.Contains(r.Stderr, "CrashLoopBackOff") || !strings.Contains(r.Stderr, "rolled back to sha256:") {
		t.Fatalf("apply of a bad change after the kill: want a rollback naming CrashLoopBackOff:\n%s", r)
	}
	if d := cmp.Diff(good, g.roDeployment("web").Spec.Template); d != "" {
		t.Errorf("web: not back on the last ready template (-want +got):\n%s", d)
	}
	g.roRequireReady("web", 1)
}

// roAwaitUnreadyPod waits until Deployment name has a pod of its current template that runs
// and is not ready: the rollout is under way and will not finish by itself.
func (g *Group) roAwaitUnreadyPod(name string) {
	g.t.Helper()
	devtest.WaitFor(g.t, time.Minute, "deployment "+name+": a running, unready pod of the new template", func() (bool, string) {
		env := roEnv(g.roDeployment(name).Spec.Template.Spec.Containers[0], "SLIPWAY_DEV_POD")
		var seen []string
		for _, p := range g.roPods(name) {
			podEnv := roEnv(p.Spec.Containers[0], "SLIPWAY_DEV_POD")
			if podEnv == env && p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning && !roPodReady(&p) {
				return true, ""
			}
			seen = append(seen, fmt.Sprintf("%s %s %s ready=%v", p.Name, podEnv, p.Status.Phase, roPodReady(&p)))
		}
		return false, fmt.Sprintf("pods %v", seen)
	})
}
