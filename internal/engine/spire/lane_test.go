package spire

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/spec"
)

type fixture struct {
	lane    *Lane
	server  *standinServer
	node    *standinNode
	cluster *standinCluster
	conf    string
	usr1    string
}

func newFixture(t *testing.T, nodes ...string) *fixture {
	t.Helper()
	conf := t.TempDir()
	pid, usr1 := signalled(t, conf)
	f := &fixture{server: newStandinServer(), node: &standinNode{t: t}, cluster: newStandinCluster(), conf: conf, usr1: usr1}
	f.lane = &Lane{
		Spire: &spec.Spire{Server: "spire.example.org:8081", TrustDomain: "example.org", ConfigDir: conf, PIDFile: pid,
			SSH: spec.SSHTarget{User: "spire", Host: "spire.example.org", Port: 22}},
		Group: "demo", Namespace: "demo", Nodes: nodes, Server: f.server, Node: f.node, Kube: f.cluster,
		PodLabels: map[string]string{},
	}
	for _, n := range []string{"api", "web", "db"} {
		f.lane.PodLabels[n] = podLabel(n, 1)
	}
	return f
}

// podLabel is a LabelSpirePod value of node's pods, the gen-th template.
func podLabel(node string, gen int) string {
	return fmt.Sprintf("%016x", len(node)*1000+gen)
}

// brief is a change as the tests compare it.
type brief struct{ What, Action, Name, Node string }

func briefs(cs []plan.SpireChange) []brief {
	out := []brief{}
	for _, c := range cs {
		out = append(out, brief{string(c.What), string(c.Action), c.Name, c.Node})
	}
	return out
}

const uid = "0b5c7a2e-1d2f-4c3b-9e8a-7f6d5c4b3a21"

func TestLaneApplyAgainAndDestroy(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, "api", "web")
	cluster := uid + "-demo"
	p, err := f.lane.Plan(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if p.Cluster != cluster || p.Bundle != f.server.bundle {
		t.Fatalf("plan read cluster %q bundle %q", p.Cluster, p.Bundle)
	}
	rbac := "slipway:spire-server:demo"
	want := []brief{
		{"clusterrole", "create", rbac, ""},
		{"clusterrolebinding", "create", rbac, ""},
		{"kubeconfig", "create", cluster, ""},
		{"allow-list", "create", "demo:node-api", "api"},
		{"allow-list", "create", "demo:node-web", "web"},
		{"entry", "create", "spiffe://example.org/k8s/" + cluster + "/demo/node-api", "api"},
		{"entry", "create", "spiffe://example.org/host/" + cluster + "/api", "api"},
		{"entry", "create", "spiffe://example.org/k8s/" + cluster + "/demo/node-web", "web"},
		{"entry", "create", "spiffe://example.org/host/" + cluster + "/web", "web"},
	}
	if d := cmp.Diff(want, briefs(p.Changes)); d != "" {
		t.Fatalf("first plan (-want +got):\n%s", d)
	}
	if err := f.lane.Apply(ctx, p.Changes); err != nil {
		t.Fatal(err)
	}
	d := filepath.Join(f.conf, "k8s_psat.d")
	hcl, err := os.ReadFile(filepath.Join(f.conf, "k8s_psat.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	wantHCL := `clusters = {
  "` + cluster + `" = {
    service_account_allow_list = ["demo:node-api", "demo:node-web"]
    audience = ["spire-server"]
    allowed_pod_label_keys = ["slipway.dev/spire-pod"]
    kube_config_file = "` + d + "/" + cluster + `/demo.kubeconfig"
  }
}
`
	if diff := cmp.Diff(wantHCL, string(hcl)); diff != "" {
		t.Errorf("k8s_psat.hcl (-want +got):\n%s", diff)
	}
	kc := filepath.Join(d, cluster, "demo.kubeconfig")
	st, err := os.Stat(kc)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("kubeconfig mode %v, want 0600", st.Mode().Perm())
	}
	if b, _ := os.ReadFile(kc); !strings.Contains(string(b), "    token: "+f.cluster.token+"\n") ||
		!strings.Contains(string(b), "server: https://192.0.2.10:6443") {
		t.Errorf("kubeconfig lacks its token or server:\n%s", strings.ReplaceAll(string(b), f.cluster.token, "<token>"))
	}
	if f.cluster.lastAccount != "demo/spire-server" || f.cluster.tokens != 1 {
		t.Errorf("token of %q, %d token(s) asked", f.cluster.lastAccount, f.cluster.tokens)
	}
	if n := signals(t, f.usr1, 1); n != 1 {
		t.Errorf("server signalled %d times, want 1", n)
	}
	if len(f.server.entries) != 4 || f.server.entries["slipway."+cluster+".demo.host.web"].ParentID != "spiffe://example.org/k8s/"+cluster+"/demo/node-web" {
		t.Errorf("entries: %v", f.server.entries)
	}

	// A second apply changes nothing: no entry, allow list, kubeconfig or rights.
	again, err := f.lane.Plan(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(again.Changes) != 0 {
		t.Fatalf("second plan: %v", briefs(again.Changes))
	}
	// A node removed: its entries and drop file go.
	f.lane.Nodes = []string{"web"}
	fewer, err := f.lane.Plan(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wantFewer := []brief{
		{"allow-list", "delete", "demo:node-api", "api"},
		{"entry", "delete", "spiffe://example.org/host/" + cluster + "/api", "api"},
		{"entry", "delete", "spiffe://example.org/k8s/" + cluster + "/demo/node-api", "api"},
	}
	if d := cmp.Diff(wantFewer, briefs(fewer.Changes)); d != "" {
		t.Fatalf("plan without api (-want +got):\n%s", d)
	}
	if err := f.lane.Apply(ctx, fewer.Changes); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(d, cluster, "demo.allow", "demo:node-api")); !os.IsNotExist(err) {
		t.Errorf("api's drop file stays: %v", err)
	}

	// Destroy: no entry, agent, file or right of the cluster stays, and the file has no
	// cluster; another cluster's agent stays.
	agent, others := "spiffe://example.org/spire/agent/k8s_psat/"+cluster+"/9d2c-node-uid", "spiffe://example.org/spire/agent/k8s_psat/"+cluster+"x/9d2c-node-uid"
	f.server.agents[agent], f.server.agents[others] = true, true
	gone, err := f.lane.PlanDestroy(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wantGone := []brief{
		{"entry", "delete", "spiffe://example.org/host/" + cluster + "/web", "web"},
		{"entry", "delete", "spiffe://example.org/k8s/" + cluster + "/demo/node-web", "web"},
		{"allow-list", "delete", "demo:node-web", "web"},
		{"kubeconfig", "delete", cluster, ""},
		{"agent", "delete", agent, ""},
		{"clusterrole", "delete", rbac, ""},
		{"clusterrolebinding", "delete", rbac, ""},
	}
	if d := cmp.Diff(wantGone, briefs(gone)); d != "" {
		t.Fatalf("destroy plan (-want +got):\n%s", d)
	}
	if err := f.lane.Apply(ctx, gone); err != nil {
		t.Fatal(err)
	}
	if len(f.server.entries) != 0 || f.cluster.deleted != 1 {
		t.Errorf("after destroy: entries %v, rights deleted %d times", f.server.entries, f.cluster.deleted)
	}
	if d := cmp.Diff(map[string]bool{others: true}, f.server.agents); d != "" {
		t.Errorf("agents after destroy (-want +got):\n%s", d)
	}
	left, _ := os.ReadDir(d)
	if len(left) != 0 {
		t.Errorf("k8s_psat.d holds %d file(s) after destroy", len(left))
	}
	if hcl, _ := os.ReadFile(filepath.Join(f.conf, "k8s_psat.hcl")); string(hcl) != "clusters = {\n}\n" {
		t.Errorf("k8s_psat.hcl after destroy: %q", hcl)
	}
	if again, err := f.lane.PlanDestroy(ctx); err != nil || len(again) != 0 {
		t.Errorf("destroy again: %v, %v", briefs(again), err)
	}
}

// TestLaneSharedServer: another cluster's files stay in the file the lane writes, and the
// lane neither lists nor deletes its entries, even one whose namespace starts with this one's.
func TestLaneSharedServer(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, "web")
	other := uid + "-demo-x"
	d := filepath.Join(f.conf, "k8s_psat.d")
	if err := os.MkdirAll(filepath.Join(d, other+".allow"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{filepath.Join(d, other+".kubeconfig"), filepath.Join(d, other+".allow", "demo-x:node-web")} {
		if err := os.WriteFile(p, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	alias, host := EntryIDs(other, "demo-x", "web")
	f.server.entries[alias] = plan.SpireEntryDef{ID: alias, SPIFFEID: AliasID("example.org", other, "demo-x", "web")}
	f.server.entries[host] = plan.SpireEntryDef{ID: host, SPIFFEID: HostID("example.org", other, "web")}
	p, err := f.lane.Plan(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.lane.Apply(ctx, p.Changes); err != nil {
		t.Fatal(err)
	}
	hcl, _ := os.ReadFile(filepath.Join(f.conf, "k8s_psat.hcl"))
	if !strings.Contains(string(hcl), `"`+other+`" = {
    service_account_allow_list = ["demo-x:node-web"]`) || !strings.Contains(string(hcl), `"`+uid+`-demo" = {`) {
		t.Errorf("k8s_psat.hcl lacks a cluster:\n%s", hcl)
	}
	gone, err := f.lane.PlanDestroy(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.lane.Apply(ctx, gone); err != nil {
		t.Fatal(err)
	}
	if _, ok := f.server.entries[alias]; !ok || len(f.server.entries) != 2 {
		t.Errorf("destroy touched the other cluster's entries: %v", f.server.entries)
	}
	if _, err := os.Stat(filepath.Join(d, other+".kubeconfig")); err != nil {
		t.Errorf("destroy touched the other cluster's kubeconfig: %v", err)
	}
}

// TestLaneNoSecretOut: the kubeconfig's token is in no plan, no change, no step and in
// nothing read back from the spire node; it goes only in the stdin of the session that
// writes it.
func TestLaneNoSecretOut(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, "web")
	p, err := f.lane.Plan(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.lane.Apply(ctx, p.Changes); err != nil {
		t.Fatal(err)
	}
	f.cluster.uid = "1c5c7a2e-1d2f-4c3b-9e8a-7f6d5c4b3a21" // a new cluster name: everything again
	p2, err := f.lane.Plan(ctx)
	if err != nil {
		t.Fatal(err)
	}
	out, err := f.node.Run(ctx, readScript(f.conf, uid+"-demo", "demo"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "kubeconfig-begin") {
		t.Fatalf("read back no kubeconfig: %q", out)
	}
	stepJSON, _ := json.Marshal(plan.Step{Kind: plan.StepSpire, Payload: plan.SpireChanges(p.Changes)})
	for name, s := range map[string]string{"read back": out, "plan": string(stepJSON), "plan after a new cluster name": mustJSON(p2.Changes)} {
		if strings.Contains(s, f.cluster.token) {
			t.Errorf("%s holds the token", name)
		}
	}
	writes := 0
	for _, s := range f.node.scripts {
		if strings.Contains(s, f.cluster.token) {
			writes++
		}
	}
	if writes != 1 {
		t.Errorf("the token went to the spire node in %d session(s), want 1", writes)
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestKubeconfigChange: the kubeconfig is written again when it is missing, for another
// API server, or its token is past half its life; else it stays.
func TestKubeconfigChange(t *testing.T) {
	shape := kubeconfigShape{server: "https://192.0.2.10:6443", ca: []byte("CA"), namespace: "demo"}
	issued := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	text := kubeconfigText("c", shape, kubeconfigHeader("u", issued, issued.Add(100*time.Hour)), "TOKEN")
	var withoutToken []string
	for _, l := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "token:") {
			withoutToken = append(withoutToken, l)
		}
	}
	other := shape
	other.server = "https://198.51.100.1:6443"
	for _, tc := range []struct {
		name   string
		remote remoteState
		shape  kubeconfigShape
		now    time.Time
		want   plan.Action
	}{
		{"missing", remoteState{}, shape, issued, plan.Create},
		{"as wanted", remoteState{kubeconfig: withoutToken}, shape, issued.Add(49 * time.Hour), ""},
		{"past half its life", remoteState{kubeconfig: withoutToken}, shape, issued.Add(51 * time.Hour), plan.Update},
		{"another API server", remoteState{kubeconfig: withoutToken}, other, issued, plan.Update},
		{"not slipway's", remoteState{kubeconfig: []string{"apiVersion: v1"}}, shape, issued, plan.Update},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := kubeconfigChange("c", tc.remote, tc.shape, tc.now)
			got := plan.Action("")
			if c != nil {
				got = c.Action
			}
			if got != tc.want {
				t.Errorf("action %q, want %q (%+v)", got, tc.want, c)
			}
		})
	}
}

// TestLaneCapacity: plan says when the cluster has fewer kube nodes than agent pods.
func TestLaneCapacity(t *testing.T) {
	for _, tc := range []struct {
		name        string
		nodes, pods int
		note        bool
	}{
		{"enough", 5, 0, false},
		{"exactly", 3, 1, false},
		{"too few", 2, 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, "api", "web")
			f.cluster.nodes, f.cluster.pods = tc.nodes, tc.pods
			p, err := f.lane.Plan(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if got := len(p.Notes) == 1 && strings.Contains(p.Notes[0], "stay Pending"); got != tc.note {
				t.Errorf("notes %q, want a note: %v", p.Notes, tc.note)
			}
		})
	}
}
