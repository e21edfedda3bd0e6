package e2e

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const helloGroup = `group: {{GROUP}}
defaults:
  state: {size: 1Gi}
nodes:
  web:
    image: {rootfs: nodes/web/rootfs}
    firewall:
      served: [22, 80, 443]
      published: [80, 443]
      admin: [22]
      adminSources: [192.0.2.0/24]
    roles:
      worker: {replicas: 2, ports: [8080], metrics: 9101}
  db:
    image: {rootfs: nodes/db/rootfs}
    init: none
    readiness: {tcp: 5432}
    firewall: {served: [5432]}
`

func TestApplyThenNoChanges(t *testing.T) {
	g := NewGroup(t, "noop", helloGroup, "web", "db")
	g.MustRun(0, "apply", "--yes")
	r := g.MustRun(0, "plan", "--detailed-exitcode")
	if !strings.Contains(r.Stdout, "No changes.") {
		t.Fatalf("plan after apply: want No changes., got %s", r)
	}
	c := g.CountRequests()
	g.MustRun(0, "apply", "--yes")
	// The one dry run of an init: systemd group (does the cluster keep a stop signal?) stores
	// nothing; TestNoopPlanCostsNoDryRun counts it.
	if w := stored(c.Writes()); len(w) != 0 {
		t.Fatalf("no-op apply made %d write requests: %v", len(w), w)
	}
}

// threeGroup has three nodes: web (published and admin ports, a role with a metrics port),
// db and cache (served ports only, no role).
const threeGroup = `group: {{GROUP}}
defaults:
  state: {size: 1Gi}
nodes:
  web:
    image: {rootfs: nodes/web/rootfs}
    firewall:
      served: [22, 80, 443]
      published: [80, 443]
      admin: [22]
      adminSources: [192.0.2.0/24]
    roles:
      worker: {replicas: 2, ports: [8080], metrics: 9101}
  db:
    image: {rootfs: nodes/db/rootfs}
    init: none
    readiness: {tcp: 5432}
    firewall: {served: [5432]}
  cache:
    image: {rootfs: nodes/cache/rootfs}
    init: none
    firewall: {served: [6379]}
`

func newThree(t *testing.T, prefix string) *Group {
	t.Helper()
	return NewGroup(t, prefix, threeGroup, "web", "db", "cache")
}

// machineIDOf returns the container_uuid env of a Deployment's node container.
func machineIDOf(t *testing.T, g *Group, name string) string {
	t.Helper()
	d, err := g.Kube.Clientset.AppsV1().Deployments(g.Name).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range d.Spec.Template.Spec.Containers {
		for _, e := range c.Env {
			if e.Name == "container_uuid" {
				return e.Value
			}
		}
	}
	t.Fatalf("deployment %s: no container_uuid", name)
	return ""
}

func claimUID(t *testing.T, g *Group, name string) string {
	t.Helper()
	c, err := g.Kube.Clientset.CoreV1().PersistentVolumeClaims(g.Name).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return string(c.UID)
}

// TestApplyRootfsChange: a new file in one node's rootfs is one image to push and one
// Deployment to update; apply replaces that pod only, and keeps its machine ID and claim.
func TestApplyRootfsChange(t *testing.T) {
	t.Parallel()
	g := newThree(t, "rootfs")
	g.MustRun(0, "apply", "--yes")
	st := g.State().State
	idBefore := st.Nodes["db"].MachineID
	claimBefore := claimUID(t, g, "db-state")
	podsBefore := g.DeploymentPods()

	g.WriteFile("nodes/db/rootfs/etc/motd", "changed\n")
	p := g.Plan()
	want := []string{"db: push db", "db: update Deployment/db"}
	if diff := cmp.Diff(want, p.ChangeLines()); diff != "" {
		t.Fatalf("plan after a rootfs change (-want +got):\n%s", diff)
	}
	g.MustRun(2, "plan", "--detailed-exitcode")
	g.MustRun(0, "apply", "--yes")

	podsAfter := g.DeploymentPods()
	if len(podsAfter["db"]) != 1 || slices.Equal(podsAfter["db"], podsBefore["db"]) {
		t.Errorf("db pod: want one new pod, before %v after %v", podsBefore["db"], podsAfter["db"])
	}
	delete(podsBefore, "db")
	delete(podsAfter, "db")
	if diff := cmp.Diff(podsBefore, podsAfter); diff != "" {
		t.Errorf("other pods must keep their UIDs (-want +got):\n%s", diff)
	}
	stAfter := g.State().State
	if diff := cmp.Diff(idBefore, stAfter.Nodes["db"].MachineID); diff != "" {
		t.Errorf("db machine ID in the state (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(idBefore, machineIDOf(t, g, "db")); diff != "" {
		t.Errorf("db container_uuid (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(claimBefore, claimUID(t, g, "db-state")); diff != "" {
		t.Errorf("db claim UID (-want +got):\n%s", diff)
	}
	if st.Nodes["db"].Image.Digest == stAfter.Nodes["db"].Image.Digest {
		t.Errorf("db digest in the state did not change: %s", stAfter.Nodes["db"].Image.Digest)
	}
	g.MustRun(0, "plan", "--detailed-exitcode")
}

// TestApplyRemoveNode: a node removed from the file has its claim marked destroyed in the
// plan, and apply removes all its objects.
func TestApplyRemoveNode(t *testing.T) {
	t.Parallel()
	g := newThree(t, "remove")
	g.MustRun(0, "apply", "--yes")
	g.WriteFile("slipway.yaml", strings.ReplaceAll(strings.Split(threeGroup, "  cache:\n")[0], "{{GROUP}}", g.Name))

	r := g.MustRun(0, "plan")
	var claimLine string
	for _, l := range strings.Split(r.Stdout, "\n") {
		if strings.Contains(l, "PersistentVolumeClaim "+g.Name+"/cache-state") {
			claimLine = l
		}
	}
	if !strings.Contains(claimLine, "delete") || !strings.Contains(claimLine, "DESTROYS DATA") {
		t.Errorf("plan: want the claim deleted and marked DESTROYS DATA, got line %q in\n%s", claimLine, r.Stdout)
	}
	want := []string{
		"cache: delete Deployment/cache",
		"cache: delete NetworkPolicy/cache",
		"cache: delete PersistentVolumeClaim/cache-state destructive",
		"cache: delete ServiceAccount/node-cache",
	}
	if diff := cmp.Diff(want, g.Plan().ChangeLines()); diff != "" {
		t.Fatalf("plan -o json (-want +got):\n%s", diff)
	}
	g.MustRun(0, "apply", "--yes")
	if left := managedOf(t, g, "cache"); len(left) != 0 {
		t.Errorf("objects of node cache left after apply: %v", left)
	}
	if _, ok := g.State().State.Nodes["cache"]; ok {
		t.Errorf("state still has node cache")
	}
	g.MustRun(0, "plan", "--detailed-exitcode")
}

// managedOf lists the objects of the kinds slipway makes that are labelled with node,
// terminating ones included.
func managedOf(t *testing.T, g *Group, node string) []string {
	t.Helper()
	live, err := g.Kube.ListManaged(context.Background(), g.Name, "slipway.dev/node="+node)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for k := range live {
		out = append(out, k.Kind+"/"+k.Name)
	}
	slices.Sort(out)
	return out
}

// A state lost (or moved to another backend) must not give running nodes new identities: the
// machine IDs come back from the live Deployments and nothing restarts.
func TestStateLostKeepsMachineIDs(t *testing.T) {
	t.Parallel()
	g := NewGroup(t, "lost", helloGroup, "web", "db")
	g.MustRun(0, "apply", "--yes")
	before := g.State().State
	uids := g.PodUIDs()
	if err := os.Remove(filepath.Join(g.Dir, ".slipway", "state", g.Name+".json")); err != nil {
		t.Fatal(err)
	}
	r := g.MustRun(0, "plan", "--detailed-exitcode")
	if !strings.Contains(r.Stdout, "No changes.") {
		t.Fatalf("plan without a state: want No changes., got %s", r)
	}
	g.MustRun(0, "apply", "--yes")
	after := g.State().State
	for _, n := range []string{"web", "db"} {
		if after.Nodes[n] == nil || after.Nodes[n].MachineID != before.Nodes[n].MachineID {
			t.Errorf("node %s: machine ID %v after the state was lost, want %s", n, after.Nodes[n], before.Nodes[n].MachineID)
		}
	}
	if d := cmp.Diff(uids, g.PodUIDs()); d != "" {
		t.Errorf("pods restarted after the state was lost (-before +after):\n%s", d)
	}
}
