package e2e

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// protectGroup: web's claim is protected, db's is not.
const protectGroup = `group: {{GROUP}}
defaults:
  state: {size: 1Gi}
nodes:
  web:
    image: {rootfs: nodes/web/rootfs}
    init: none
    state: {protect: true}
  db:
    image: {rootfs: nodes/db/rootfs}
    init: none
`

// dbOnly is protectGroup without web.
const dbOnly = `group: {{GROUP}}
nodes:
  db:
    image: {rootfs: nodes/db/rootfs}
    init: none
`

// TestProtectRefusesDeletion (SPEC §6a): with web's claim protected, plan refuses to replace
// it, plan and apply refuse to remove web from the file, and plan -destroy and destroy refuse to run, each naming the node
// and the claim and changing nothing; after web is applied without protect, removing it plans.
func TestProtectRefusesDeletion(t *testing.T) {
	t.Parallel()
	g := NewGroup(t, "protect", protectGroup, "web", "db")
	g.MustRun(0, "apply", "--yes")
	if ns := g.State().State.Nodes["web"]; ns == nil || !ns.Protect {
		t.Fatalf("state of web after apply = %+v, want protect recorded", ns)
	}
	if diff := cmp.Diff(map[string]bool{"web": true, "db": false}, protectedInStatus(g)); diff != "" {
		t.Errorf("status -o json: protected per node (-want +got):\n%s", diff)
	}
	uid := claimUID(t, g, "web-state")
	claim := "node web: claim " + g.Name + "/web-state is protected (state.protect)"

	// A claim replaced (its storage class is immutable) is refused too.
	g.WriteFile("slipway.yaml", strings.ReplaceAll(strings.Replace(protectGroup, "{protect: true}", "{protect: true, storageClass: other}", 1), "{{GROUP}}", g.Name))
	if r := g.MustRun(1, "plan"); !strings.Contains(r.Stderr, claim+": apply would replace it (") {
		t.Errorf("plan with web's storage class changed: stderr lacks %q:\n%s", claim+": apply would replace it (", r)
	}

	g.WriteFile("slipway.yaml", strings.ReplaceAll(dbOnly, "{{GROUP}}", g.Name))
	for _, args := range [][]string{{"plan"}, {"apply", "--yes"}} {
		r := g.MustRun(1, args...)
		if want := claim + ": the node left the group file"; !strings.Contains(r.Stderr, want) {
			t.Errorf("slipway %s: stderr lacks %q:\n%s", strings.Join(args, " "), want, r)
		}
	}
	for _, args := range [][]string{{"plan", "-destroy"}, {"destroy", "--yes"}} {
		r := g.MustRun(1, args...)
		if want := claim + ": destroy would delete it"; !strings.Contains(r.Stderr, want) || !strings.Contains(r.Stderr, "--keep-claims") {
			t.Errorf("slipway %s: stderr lacks %q and --keep-claims:\n%s", strings.Join(args, " "), want, r)
		}
	}
	if got := claimUID(t, g, "web-state"); got != uid || !g.NamespaceExists() {
		t.Fatalf("after the refusals: claim web-state UID %s (was %s), namespace exists %v", got, uid, g.NamespaceExists())
	}
	if _, err := g.Kube.Clientset.AppsV1().Deployments(g.Name).Get(context.Background(), "web", metav1.GetOptions{}); err != nil {
		t.Errorf("deployment web after the refusals: %v", err)
	}

	// Lifting the protection is an apply without it; then web can go.
	g.WriteFile("slipway.yaml", strings.ReplaceAll(strings.Replace(protectGroup, "    state: {protect: true}\n", "", 1), "{{GROUP}}", g.Name))
	g.MustRun(0, "apply", "--yes")
	if ns := g.State().State.Nodes["web"]; ns == nil || ns.Protect {
		t.Fatalf("state of web after applying it without protect = %+v, want no protect", ns)
	}
	g.WriteFile("slipway.yaml", strings.ReplaceAll(dbOnly, "{{GROUP}}", g.Name))
	want := []string{"web: delete Deployment/web", "web: delete NetworkPolicy/web", "web: delete PersistentVolumeClaim/web-state destructive", "web: delete ServiceAccount/node-web"}
	if diff := cmp.Diff(want, g.Plan().ChangeLines()); diff != "" {
		t.Errorf("plan without web, unprotected (-want +got):\n%s", diff)
	}
}

// protectedInStatus maps each node of `status -o json` to its protected field.
func protectedInStatus(g *Group) map[string]bool {
	g.t.Helper()
	r := g.MustRun(0, "status", "-o", "json")
	var doc struct {
		Nodes []struct {
			Node      string `json:"node"`
			Protected bool   `json:"protected"`
		} `json:"nodes"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &doc); err != nil {
		g.t.Fatalf("status -o json: %v\n%s", err, r)
	}
	out := map[string]bool{}
	for _, n := range doc.Nodes {
		out[n.Node] = n.Protected
	}
	return out
}

// TestProtectKeepClaims (SPEC §2, §6a): destroy --keep-claims removes every object of the
// group but its claims, keeps the namespace slipway created and says so; a later apply
// reattaches the same claims (same UIDs, same machine IDs) and the nodes become ready.
func TestProtectKeepClaims(t *testing.T) {
	t.Parallel()
	g := NewGroup(t, "keepclaims", protectGroup, "web", "db")
	g.MustRun(0, "apply", "--yes")
	ctx := context.Background()
	cs := g.Kube.Clientset
	uids := map[string]string{"web-state": claimUID(t, g, "web-state"), "db-state": claimUID(t, g, "db-state")}
	ids := map[string]string{"web": machineIDOf(t, g, "web"), "db": machineIDOf(t, g, "db")}

	r := g.MustRun(0, "destroy", "--keep-claims", "--yes")
	if want := "db-state, web-state, namespace " + g.Name + " and the state of group " + g.Name + " stay"; !strings.Contains(r.Stderr, want) {
		t.Errorf("destroy --keep-claims: stderr lacks %q:\n%s", want, r)
	}
	if !g.NamespaceExists() {
		t.Fatalf("namespace %s is gone after destroy --keep-claims", g.Name)
	}
	if diff := cmp.Diff([]string{"PersistentVolumeClaim/db-state", "PersistentVolumeClaim/web-state"}, g.groupObjects(g.Name)); diff != "" {
		t.Errorf("the group's objects after destroy --keep-claims (-want +got):\n%s", diff)
	}
	for name, uid := range uids {
		if got := claimUID(t, g, name); got != uid {
			t.Errorf("claim %s after destroy --keep-claims: UID %s, want %s", name, got, uid)
		}
	}

	g.MustRun(0, "apply", "--yes")
	for name, uid := range uids {
		if got := claimUID(t, g, name); got != uid {
			t.Errorf("claim %s after the apply: UID %s, want %s (reattached)", name, got, uid)
		}
	}
	for node, id := range ids {
		d, err := cs.AppsV1().Deployments(g.Name).Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if d.Status.ReadyReplicas != 1 {
			t.Errorf("deployment %s after the apply: %d ready replicas, want 1", node, d.Status.ReadyReplicas)
		}
		if got := machineIDOf(t, g, node); got != id {
			t.Errorf("node %s machine ID after the apply: %s, want %s", node, got, id)
		}
	}
	if p := g.Plan(); p.Changes {
		t.Errorf("plan after the apply: changes %v, want none", p.ChangeLines())
	}
}
