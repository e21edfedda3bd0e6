package e2e

// plan against the dev cluster: what plan -destroy previews, the dry runs plan makes for
// creates, and a plan with no changes that costs no dry run.

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"slipway.dev/slipway/internal/devcluster/devtest"
)

// `plan -destroy` (SPEC §2, as OpenTofu's) previews what destroy removes, the claims marked
// destructive, with --detailed-exitcode, in OpenTofu's single-dash spelling and in pflag's; it
// writes nothing. After destroy there is nothing left to remove.
func TestPlanDestroy(t *testing.T) {
	t.Parallel()
	g := NewGroup(t, "pdestroy", helloGroup, "web", "db")
	g.MustRun(0, "apply", "--yes")
	c := g.CountRequests()
	for _, args := range [][]string{
		{"plan", "-destroy", "-detailed-exitcode"},
		{"plan", "--destroy", "--detailed-exitcode"},
	} {
		r := g.MustRun(2, args...)
		for _, want := range []string{"Destroy plan for group " + g.Name, "PersistentVolumeClaim " + g.Name + "/web-state", "DESTROYS DATA", "Namespace " + g.Name} {
			if !strings.Contains(r.Stdout, want) {
				t.Errorf("%v: no %q in\n%s", args, want, r)
			}
		}
	}
	r := g.MustRun(0, "plan", "-destroy", "-o", "json")
	var v struct {
		PlanView
		Destroy bool `json:"destroy"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &v); err != nil {
		t.Fatalf("plan -destroy -o json: %v\n%s", err, r)
	}
	want := []string{
		"db: delete Deployment/db", "db: delete NetworkPolicy/db", "db: delete PersistentVolumeClaim/db-state destructive",
		"db: delete ServiceAccount/node-db",
		"group: delete Namespace/" + g.Name, "group: delete NetworkPolicy/default-deny",
		"web: delete Deployment/web", "web: delete Deployment/web-worker", "web: delete NetworkPolicy/web",
		"web: delete NetworkPolicy/web-worker", "web: delete NetworkPolicy/web-worker-metrics",
		"web: delete PersistentVolumeClaim/web-state destructive", "web: delete PodDisruptionBudget/web-worker",
		"web: delete Service/web", "web: delete Service/web-worker",
		"web: delete Service/web-worker-metrics", "web: delete ServiceAccount/node-web",
	}
	if d := cmp.Diff(want, v.ChangeLines()); d != "" || !v.Destroy || !v.Changes {
		t.Errorf("plan -destroy -o json: destroy %t, changes %t, changes (-want +got):\n%s", v.Destroy, v.Changes, d)
	}
	if w := c.Writes(); len(w) != 0 {
		t.Fatalf("plan -destroy made %d write requests: %v", len(w), w)
	}
	if !g.NamespaceExists() || g.State().State == nil {
		t.Fatal("plan -destroy removed the namespace or the state")
	}
	g.MustRun(0, "destroy", "--yes")
	if r := g.MustRun(0, "plan", "-destroy", "-detailed-exitcode"); !strings.Contains(r.Stdout, "No changes.") {
		t.Errorf("plan -destroy after destroy: want No changes., got %s", r)
	}
}

// bigEnvGroup has a node whose environment the API server refuses (a 5 MiB value; the request
// limit is 3 MiB), next to a node it accepts.
func bigEnvGroup() string {
	return `group: {{GROUP}}
defaults:
  state: {size: 1Gi}
  init: none
nodes:
  small:
    image: {rootfs: nodes/small/rootfs}
  big:
    image: {rootfs: nodes/big/rootfs}
    env: {BIG: "` + strings.Repeat("x", 5<<20) + `"}
`
}

// Plan dry-runs every object apply would create, so what the API server refuses fails in plan,
// before anything changes: in a namespace that does not exist yet (the server checks a
// request's size before it looks the namespace up), and for a node added to a group that runs.
func TestPlanDryRunsCreates(t *testing.T) {
	t.Parallel()
	t.Run("new namespace", func(t *testing.T) {
		t.Parallel()
		g := NewGroup(t, "bigenv", bigEnvGroup(), "small", "big")
		for _, verb := range [][]string{{"plan"}, {"apply", "--yes"}} {
			r := g.MustRun(1, verb...)
			if !strings.Contains(r.Stderr, "node big") || !strings.Contains(r.Stderr, "Deployment "+g.Name+"/big") || !strings.Contains(strings.ToLower(r.Stderr), "too large") {
				t.Errorf("%v: want an error naming node big, its Deployment and the size, got %s", verb, r)
			}
			if g.NamespaceExists() {
				t.Fatalf("%v: the namespace was created", verb)
			}
		}
	})
	t.Run("node added", func(t *testing.T) {
		t.Parallel()
		small, _, _ := strings.Cut(bigEnvGroup(), "  big:")
		g := NewGroup(t, "bigadd", small, "small")
		g.MustRun(0, "apply", "--yes")
		g.WriteFile("nodes/big/rootfs/etc/hostname", "big\n")
		g.WriteFile("slipway.yaml", strings.ReplaceAll(bigEnvGroup(), "{{GROUP}}", g.Name))
		before := g.State().State.Serial
		r := g.MustRun(1, "apply", "--yes")
		if !strings.Contains(r.Stderr, "Deployment "+g.Name+"/big") {
			t.Errorf("apply: want an error naming Deployment %s/big, got %s", g.Name, r)
		}
		if got := managedOf(t, g, "big"); len(got) != 0 {
			t.Errorf("objects of node big made before the refusal: %v", got)
		}
		if got := g.State().State.Serial; got != before {
			t.Errorf("the state was written (serial %d, was %d)", got, before)
		}
	})
}

// manyNodes is a group of n init: none nodes (node-0 …), and, with systemd, one more node
// that runs systemd.
func manyNodes(n int, systemd bool) (tmpl string, nodes []string) {
	var b strings.Builder
	b.WriteString("group: {{GROUP}}\ndefaults:\n  state: {size: 1Gi}\n  init: none\nnodes:\n")
	for i := range n {
		name := fmt.Sprintf("node-%d", i)
		nodes = append(nodes, name)
		fmt.Fprintf(&b, "  %s:\n    image: {rootfs: nodes/%s/rootfs}\n", name, name)
	}
	if systemd {
		nodes = append(nodes, "sd")
		b.WriteString("  sd:\n    image: {rootfs: nodes/sd/rootfs}\n    init: systemd\n")
	}
	return b.String(), nodes
}

// A plan with nothing to change costs no dry run, however many nodes: its requests do not grow
// with the group. Only a group with an init: systemd node costs one dry run, once per run: the
// question whether the cluster keeps a stop signal.
func TestNoopPlanCostsNoDryRun(t *testing.T) {
	t.Parallel()
	totals := map[string]int{}
	for _, tc := range []struct {
		name    string
		nodes   int
		systemd bool
		dryRuns int
	}{
		{"2 nodes", 2, false, 0},
		{"12 nodes", 12, false, 0},
		{"12 nodes and a systemd one", 12, true, 1},
	} {
		tmpl, nodes := manyNodes(tc.nodes, tc.systemd)
		g := NewGroup(t, "noopcost", tmpl, nodes...)
		g.MustRun(0, "apply", "--yes")
		c := g.CountRequests()
		if r := g.MustRun(0, "plan", "--detailed-exitcode"); !strings.Contains(r.Stdout, "No changes.") {
			t.Fatalf("%s: plan after apply: want No changes., got %s", tc.name, r)
		}
		reqs := c.Requests()
		dry := dryRuns(reqs)
		if w := stored(c.Writes()); len(w) != 0 {
			t.Errorf("%s: no-op plan made %d writes: %v", tc.name, len(w), w)
		}
		if len(dry) != tc.dryRuns {
			t.Errorf("%s: no-op plan made %d dry runs, want %d: %v", tc.name, len(dry), tc.dryRuns, dry)
		}
		totals[tc.name] = len(reqs) - len(dry)
		t.Logf("%s: no-op plan: %d requests to the API server, %d of them dry runs: %v", tc.name, len(reqs), len(dry), devtest.ByVerb(reqs))
	}
	if totals["2 nodes"] != totals["12 nodes"] || totals["12 nodes"] != totals["12 nodes and a systemd one"] {
		t.Errorf("no-op plan requests (dry runs aside) grow with the group: %v", totals)
	}
}

// dryRuns are the server-side dry runs among reqs.
func dryRuns(reqs []devtest.Request) []devtest.Request {
	return slices.DeleteFunc(slices.Clone(reqs), func(r devtest.Request) bool { return !r.DryRun })
}
