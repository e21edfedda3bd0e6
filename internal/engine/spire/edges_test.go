package spire

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"slipway.dev/slipway/internal/plan"
)

// Issue 46 item 3: host IDs are path segments, so no two (cluster, node) pairs share one
// (namespace shop with node web-db, namespace shop-web with node db made one ID before).
func TestHostIDsNeverCollide(t *testing.T) {
	a := HostID("example.org", uid+"-shop", "web-db")
	b := HostID("example.org", uid+"-shop-web", "db")
	if a == b {
		t.Fatalf("two nodes share the host ID %s", a)
	}
	if want := "spiffe://example.org/host/" + uid + "-shop/web-db"; a != want {
		t.Errorf("host ID %s, want %s", a, want)
	}
}

// Issue 46 item 3: plan refuses an entry whose SPIFFE ID the server already gives another
// entry with other selectors; the same ID with the same selectors and parent is no harm.
func TestLaneRefusesTakenSPIFFEID(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, "web")
	cluster := uid + "-demo"
	taken := HostID("example.org", cluster, "web")
	f.server.entries["someone-else"] = plan.SpireEntryDef{ID: "someone-else", SPIFFEID: taken,
		ParentID: "spiffe://example.org/spire/server", Selectors: []string{"k8s_psat:agent_ns:intruder"}}
	_, err := f.lane.Plan(ctx)
	var ce *EntryConflictError
	if !errors.As(err, &ce) || ce.Live.ID != "someone-else" || !strings.Contains(err.Error(), taken) {
		t.Fatalf("plan with %s taken: %v, want an EntryConflictError naming it", taken, err)
	}
	if len(f.node.scripts) > 0 && f.server.calls["create"] > 0 {
		t.Errorf("plan made entries")
	}
	// The same entry under another ID (the same selectors and parent) hands nothing new.
	_, host := EntryIDs(cluster, "demo", "web")
	want := wantEntries("example.org", cluster, "demo", "demo", []string{"web"}, f.lane.PodLabels)[1]
	want.ID = "copy"
	f.server.entries["someone-else"] = want
	if _, err := f.lane.Plan(ctx); err != nil {
		t.Errorf("plan beside an equal entry (%s): %v", host, err)
	}
}

// Issue 46 item 4: two deployments in one namespace share the cluster name, and each keeps
// its own files, entries and rights: a destroy of one that was never applied removes
// nothing, and a destroy of one removes nothing of the other; the cluster's agents go with
// its last deployment.
func TestLaneTwoDeploymentsOneNamespace(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, "api")
	cluster := uid + "-demo"
	a := f.lane
	a.Group = "shop"
	b := *a
	b.Group, b.Nodes = "shop.front", []string{"web"}
	p, err := a.Plan(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Apply(ctx, p.Changes); err != nil {
		t.Fatal(err)
	}
	agent := "spiffe://example.org/spire/agent/k8s_psat/" + cluster + "/9d2c-node-uid"
	f.server.agents[agent] = true
	before := map[string]any{"entries": len(f.server.entries), "files": dirFiles(t, f.conf), "agents": len(f.server.agents)}

	never, err := b.PlanDestroy(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(never) != 0 {
		t.Fatalf("destroy of a deployment never applied plans %v", briefs(never))
	}
	if err := b.Apply(ctx, never); err != nil {
		t.Fatal(err)
	}
	pb, err := b.Plan(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Apply(ctx, pb.Changes); err != nil {
		t.Fatal(err)
	}
	hcl, _ := os.ReadFile(filepath.Join(f.conf, "k8s_psat.hcl"))
	if !strings.Contains(string(hcl), `service_account_allow_list = ["demo:node-api", "demo:node-web"]`) {
		t.Errorf("k8s_psat.hcl with both deployments:\n%s", hcl)
	}
	gone, err := b.PlanDestroy(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range gone {
		if c.What == plan.SpireAgent || c.Node == "api" {
			t.Errorf("destroy of %s plans %s", b.Group, c)
		}
	}
	if err := b.Apply(ctx, gone); err != nil {
		t.Fatal(err)
	}
	after := map[string]any{"entries": len(f.server.entries), "files": dirFiles(t, f.conf), "agents": len(f.server.agents)}
	if d := cmp.Diff(before, after); d != "" {
		t.Errorf("a's parts after b's apply and destroy (-before +after):\n%s", d)
	}
	if d := cmp.Diff(map[string]bool{"shop": true}, f.cluster.rights); d != "" {
		t.Errorf("rights after b's apply and destroy (-want +got):\n%s", d)
	}
	// a is the cluster's last deployment: its destroy takes the agents too.
	last, err := a.PlanDestroy(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Apply(ctx, last); err != nil {
		t.Fatal(err)
	}
	if len(f.server.entries) != 0 || len(f.server.agents) != 0 {
		t.Errorf("after the last destroy: entries %v, agents %v", f.server.entries, f.server.agents)
	}
}

// dirFiles are the files under dir (k8s_psat.hcl's content and each name), but the
// stand-in server's own.
func dirFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if rel == "usr1" || rel == "spire-server.pid" {
			return nil
		}
		b, _ := os.ReadFile(p)
		out[rel] = string(b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Issue 46 item 10: a saved plan is data. An edited plan file (a name that would run a
// command on the spire node, an entry with the admin's SPIFFE ID, the counts unchanged)
// runs nothing and mints nothing: apply plans again and refuses.
func TestLaneSavedPlanEdited(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		edit func(cs []plan.SpireChange)
	}{
		{"a command in an allow-list name", func(cs []plan.SpireChange) {
			for i := range cs {
				if cs[i].What == plan.SpireAllow {
					cs[i].Name = `demo:node-web"; touch "$conf/pwned`
				}
			}
		}},
		{"the admin's SPIFFE ID in an entry", func(cs []plan.SpireChange) {
			for i := range cs {
				if cs[i].What == plan.SpireEntry {
					e := *cs[i].Entry
					e.SPIFFEID, e.Selectors = "spiffe://example.org/admin", []string{"unix:uid:0"}
					cs[i].Entry = &e
					return
				}
			}
		}},
		{"another entry ID", func(cs []plan.SpireChange) {
			for i := range cs {
				if cs[i].What == plan.SpireEntry {
					e := *cs[i].Entry
					e.ID = "slipway.other.alias.x"
					cs[i].Entry = &e
					return
				}
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, "web")
			p, err := f.lane.Plan(ctx)
			if err != nil {
				t.Fatal(err)
			}
			saved := make([]plan.SpireChange, len(p.Changes))
			copy(saved, p.Changes)
			tc.edit(saved)
			f.node.scripts = nil
			err = f.lane.ApplySaved(ctx, saved)
			var se *SavedPlanError
			if !errors.As(err, &se) {
				t.Fatalf("apply of the edited plan: %v, want a SavedPlanError", err)
			}
			for _, s := range f.node.scripts {
				if strings.Contains(s, "pwned") || strings.Contains(s, "mkdir \"$lock\"") {
					t.Errorf("the spire node ran a sync script for an edited plan:\n%s", s)
				}
			}
			if _, err := os.Stat(filepath.Join(f.conf, "pwned")); err == nil {
				t.Error("the edited name ran as a command on the spire node")
			}
			if len(f.server.entries) != 0 || f.cluster.applied != 0 {
				t.Errorf("apply of the edited plan made entries %v, rights %d time(s)", f.server.entries, f.cluster.applied)
			}
		})
	}
	// The plan as saved applies.
	f := newFixture(t, "web")
	p, err := f.lane.Plan(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.lane.ApplySaved(ctx, p.Changes); err != nil {
		t.Fatalf("apply of the unedited plan: %v", err)
	}
	if len(f.server.entries) != 2 {
		t.Errorf("entries: %v", f.server.entries)
	}
}

// Issue 46 item 10: even past the re-plan, Apply makes no entry that is not the
// deployment's own, and syncScript passes no name to the shell that is no account name.
func TestLaneApplyChecksEveryEntry(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, "web")
	cluster := uid + "-demo"
	alias, _ := EntryIDs(cluster, "demo", "web")
	for _, e := range []plan.SpireEntryDef{
		{ID: alias, SPIFFEID: "spiffe://example.org/admin", ParentID: "spiffe://example.org/spire/server", Selectors: []string{"unix:uid:0"}},
		{ID: "slipway." + cluster + ".other.alias.web", SPIFFEID: AliasID("example.org", cluster, "demo", "web"), ParentID: "spiffe://example.org/spire/server"},
	} {
		err := f.lane.Apply(ctx, []plan.SpireChange{{What: plan.SpireEntry, Action: plan.Create, Cluster: cluster, Entry: &e}})
		if err == nil || len(f.server.entries) != 0 {
			t.Errorf("apply of entry %+v: %v, entries %v", e, err, f.server.entries)
		}
	}
	if _, err := syncScript(f.lane.Spire, cluster, "demo", []plan.SpireChange{{What: plan.SpireAllow, Action: plan.Create, Name: "demo:$(id)", Cluster: cluster}}, ""); err == nil {
		t.Error("syncScript took an allow name with $(id)")
	}
}

// authorized are the SPIFFE IDs the server hands an agent with selectors sel: the node
// entries (parent the server) whose selectors sel holds, and what hangs below them. It
// stands in for the server's entry cache, which answers with the selectors it last saw of
// an agent ID: after a pod of another node attests with the same agent ID (k8s_psat keys it
// by the kube node), the last pod's, for up to cache_reload_interval.
func authorized(es map[string]plan.SpireEntryDef, sel []string) []string {
	var out []string
	parents := map[string]bool{}
	for _, e := range es {
		if e.ParentID != "spiffe://example.org/spire/server" {
			continue
		}
		all := true
		for _, s := range e.Selectors {
			all = all && slices.Contains(sel, s)
		}
		if all {
			parents[e.SPIFFEID] = true
			out = append(out, e.SPIFFEID)
		}
	}
	for _, e := range es {
		if parents[e.ParentID] {
			out = append(out, e.SPIFFEID)
		}
	}
	slices.Sort(out)
	return out
}

// Issue 46 item 11: a kube node's next agent never inherits the last one's identity. Node a
// leaves a kube node and b's pod takes it: b's agent gets a's agent ID, and the server may
// answer it with what it last saw of that ID, a's old pod's selectors. The alias entries
// select the pods of the node's current template, and apply moved a's to its new pods before
// any pod moved, so a's old pod's selectors match no entry, whenever b asks.
func TestLaneNextAgentInheritsNothing(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, "a", "b")
	f.lane.PodLabels = map[string]string{"a": podLabel("a", 1), "b": podLabel("b", 1)}
	cluster := uid + "-demo"
	apply := func() {
		t.Helper()
		p, err := f.lane.Plan(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.lane.Apply(ctx, p.Changes); err != nil {
			t.Fatal(err)
		}
	}
	apply()
	pod := func(node string, gen int) []string {
		return []string{"k8s_psat:cluster:" + cluster, "k8s_psat:agent_ns:demo", "k8s_psat:agent_sa:node-" + node,
			"k8s_psat:agent_pod_uid:uid-" + node + strconv.Itoa(gen), "k8s_psat:agent_node_name:real", PodSelector(podLabel(node, gen))}
	}
	if d := cmp.Diff([]string{HostID("example.org", cluster, "a"), AliasID("example.org", cluster, "demo", "a")}, authorized(f.server.entries, pod("a", 1))); d != "" {
		t.Fatalf("a's own agent (-want +got):\n%s", d)
	}
	// a moves off the kube node: a new template, so a new label; the plan moves a's alias.
	f.lane.PodLabels["a"] = podLabel("a", 2)
	p, err := f.lane.Plan(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]brief{{"entry", "update", AliasID("example.org", cluster, "demo", "a"), "a"}}, briefs(p.Changes)); d != "" {
		t.Fatalf("plan after a's template changed (-want +got):\n%s", d)
	}
	if err := f.lane.Apply(ctx, p.Changes); err != nil {
		t.Fatal(err)
	}
	// b's agent on the kube node, answered with a's old pod's selectors: nothing.
	if got := authorized(f.server.entries, pod("a", 1)); len(got) != 0 {
		t.Errorf("an agent with a's old pod's selectors is handed %v", got)
	}
	// And with its own, only b's; a's new pod gets a's.
	if d := cmp.Diff([]string{HostID("example.org", cluster, "b"), AliasID("example.org", cluster, "demo", "b")}, authorized(f.server.entries, pod("b", 1))); d != "" {
		t.Errorf("b's agent (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{HostID("example.org", cluster, "a"), AliasID("example.org", cluster, "demo", "a")}, authorized(f.server.entries, pod("a", 2))); d != "" {
		t.Errorf("a's new pod (-want +got):\n%s", d)
	}
	// A plan without the label refuses: an alias on the account alone would match any pod.
	f.lane.PodLabels["b"] = ""
	if _, err := f.lane.Plan(ctx); err == nil || !strings.Contains(err.Error(), "node b") {
		t.Errorf("plan without b's pod label: %v", err)
	}
}
