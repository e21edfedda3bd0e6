package e2e

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// stepsView is the steps part of `plan -o json`.
type stepsView struct {
	GroupSteps []stepView `json:"groupSteps"`
	Nodes      []struct {
		Node  string     `json:"node"`
		Steps []stepView `json:"steps"`
	} `json:"nodes"`
}

type stepView struct {
	Kind     string `json:"kind"`
	Role     string `json:"role"`
	Rollback string `json:"rollback"`
}

// line is "kind[ role][ rollback]".
func (s stepView) line() string {
	return strings.Join(slices.DeleteFunc([]string{s.Kind, s.Role, s.Rollback}, func(w string) bool { return w == "" }), " ")
}

func (g *Group) planSteps() map[string][]string {
	g.t.Helper()
	r := g.MustRun(0, "plan", "-o", "json")
	var v stepsView
	if err := json.Unmarshal([]byte(r.Stdout), &v); err != nil {
		g.t.Fatalf("plan -o json: %v\n%s", err, r)
	}
	out := map[string][]string{}
	for _, s := range v.GroupSteps {
		out["group"] = append(out["group"], s.line())
	}
	for _, n := range v.Nodes {
		for _, s := range n.Steps {
			out[n.Node] = append(out[n.Node], s.line())
		}
	}
	return out
}

// applyPhases runs `apply -o json` and returns each node's event phases, repeats folded.
func (g *Group) applyPhases() map[string][]string {
	g.t.Helper()
	r := g.MustRun(0, "apply", "--yes", "-o", "json")
	out := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(r.Stdout), "\n") {
		var ev struct{ Node, Phase string }
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			g.t.Fatalf("apply -o json: %v: %q", err, line)
		}
		if ph := out[ev.Node]; len(ph) == 0 || ph[len(ph)-1] != ev.Phase {
			out[ev.Node] = append(ph, ev.Phase)
		}
	}
	return out
}

// TestPlanSteps: plan lists the steps apply runs, and apply runs them in that order: on a first
// deploy (each new claim awaited before its Deployment: the dev cluster's StorageClass binds
// claims as they are made), and when the node's environment changes (its role on the node's
// image stops first).
func TestPlanSteps(t *testing.T) {
	g := NewGroup(t, "steps", helloGroup, "web", "db")
	want := map[string][]string{
		"group": {"apply-objects"},
		"db":    {"push", "apply-objects", "await-claim", "apply-deployment", "await-rollout none"},
		"web":   {"push", "apply-objects", "await-claim", "apply-deployment", "await-rollout none", "start-role worker"},
	}
	if d := cmp.Diff(want, g.planSteps()); d != "" {
		t.Errorf("steps of a first deploy (-want +got):\n%s", d)
	}
	g.MustRun(0, "apply", "--yes")

	g.WriteFile("slipway.yaml", strings.Replace(strings.ReplaceAll(helloGroup, "{{GROUP}}", g.Name),
		"    image: {rootfs: nodes/web/rootfs}\n", "    image: {rootfs: nodes/web/rootfs}\n    env: {MODE: blue}\n", 1))
	want = map[string][]string{
		"web": {"stop-role worker", "apply-deployment", "await-rollout last-ready", "start-role worker"},
	}
	if d := cmp.Diff(want, g.planSteps()); d != "" {
		t.Errorf("steps of an environment change (-want +got):\n%s", d)
	}
	r := g.MustRun(0, "plan")
	if !strings.Contains(r.Stdout, "stop role worker (Deployment web-worker to 0 replicas)") {
		t.Errorf("plan text lacks the stop of role worker:\n%s", r.Stdout)
	}
	// The engine's own order, as its events show it (a role's start reports its own rollout).
	phases := g.applyPhases()["web"]
	at := func(p string) int { return slices.Index(phases, p) }
	if at("stop-roles") < 0 || !(at("stop-roles") < at("rollout") && at("rollout") < at("start-roles")) || phases[len(phases)-1] != "done" {
		t.Errorf("apply's phases for node web = %v, want stop-roles, rollout, start-roles, then done", phases)
	}
}
