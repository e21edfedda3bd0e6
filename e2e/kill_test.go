package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

const killGroup = `group: {{GROUP}}
defaults:
  state: {size: 1Gi}
  env: {TRIAL: "{{TRIAL}}"}
nodes:
  web:
    image: {rootfs: nodes/web/rootfs}
    firewall:
      served: [22, 80, 443]
      published: [80, 443]
    roles:
      worker: {replicas: 2, ports: [8080]}
  db:
    image: {rootfs: nodes/db/rootfs}
    init: none
    firewall: {served: [5432]}
`

// TestApplyKilled: an apply killed with SIGKILL at a random moment leaves its lock (removed
// with `state unlock`) and a state from which the next apply converges; a plan after it shows
// no changes, and machine IDs never change.
func TestApplyKilled(t *testing.T) {
	t.Parallel()
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	g := NewGroup(t, "kill", strings.ReplaceAll(killGroup, "{{TRIAL}}", "0"), "web", "db")
	write := func(trial int) {
		g.WriteFile("slipway.yaml", strings.NewReplacer("{{GROUP}}", g.Name, "{{TRIAL}}", fmt.Sprint(trial)).Replace(killGroup))
		if trial%3 == 2 {
			// Some trials also change an image, so kills land in pushes too.
			g.WriteFile("nodes/db/rootfs/etc/trial", fmt.Sprint(trial)+"\n")
		}
	}
	var ids map[string]string
	const trials = 12
	for trial := 1; trial <= trials; trial++ {
		write(trial)
		after := time.Duration(rng.Int64N(int64(1500 * time.Millisecond)))
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		cmd := g.Command(ctx, "apply", "--yes")
		if err := cmd.Start(); err != nil {
			cancel()
			t.Fatal(err)
		}
		time.Sleep(after)
		_ = cmd.Process.Kill() // SIGKILL; it may have finished already
		_ = cmd.Wait()
		cancel()

		st := g.State()
		unlocked := false
		if st.Lock != nil {
			g.MustRun(0, "state", "unlock", st.Lock.ID)
			unlocked = true
		}
		r := g.Run("apply", "--yes")
		if r.Code != 0 {
			t.Fatalf("trial %d (killed after %s, unlocked %t): the next apply failed: %s", trial, after, unlocked, r)
		}
		r = g.Run("plan", "--detailed-exitcode")
		if r.Code != 0 {
			t.Fatalf("trial %d (killed after %s, unlocked %t): plan after the converging apply: want exit 0, got %s", trial, after, unlocked, r)
		}
		got := map[string]string{}
		for n, ns := range g.State().State.Nodes {
			got[n] = ns.MachineID
			for r, rs := range ns.Roles {
				got[n+"/"+r] = rs.MachineID
			}
		}
		if ids == nil {
			ids = got
		} else if diff := cmp.Diff(ids, got); diff != "" {
			t.Fatalf("trial %d (killed after %s): machine IDs changed (-want +got):\n%s", trial, after, diff)
		}
		if id := machineIDOf(t, g, "db"); id != ids["db"] {
			t.Fatalf("trial %d: db container_uuid %s, state %s", trial, id, ids["db"])
		}
		pods := map[string]int{}
		for d, uids := range g.DeploymentPods() {
			pods[d] = len(uids)
		}
		if diff := cmp.Diff(map[string]int{"web": 1, "web-worker": 2, "db": 1}, pods); diff != "" {
			t.Fatalf("trial %d (killed after %s): pods per Deployment (-want +got):\n%s", trial, after, diff)
		}
		t.Logf("trial %d: killed after %s, lock left: %t", trial, after.Round(time.Millisecond), unlocked)
	}
}
