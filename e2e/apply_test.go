package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"slipway.dev/slipway/internal/spec"
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

// TestApplyThreeNodes: every pod Ready, images by digest, claims Bound, the policies and
// Services of SPEC §5; then plan says No changes and a second apply writes nothing.
func TestApplyThreeNodes(t *testing.T) {
	t.Parallel()
	g := newThree(t, "three")
	g.MustRun(0, "apply", "--yes")
	ctx := context.Background()
	cs := g.Kube.Clientset

	// Pods: one per node, two of the role, all Ready.
	pods, err := cs.CoreV1().Pods(g.Name).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	gotPods := map[string]int{}
	for _, p := range pods.Items {
		ready := false
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				ready = true
			}
		}
		if !ready {
			t.Errorf("pod %s is not Ready: %+v", p.Name, p.Status.Conditions)
		}
		gotPods[p.Labels["app.kubernetes.io/name"]]++
	}
	if diff := cmp.Diff(map[string]int{"web": 1, "web-worker": 2, "db": 1, "cache": 1}, gotPods); diff != "" {
		t.Errorf("pods per Deployment (-want +got):\n%s", diff)
	}

	// Deployments name their image by digest, the one the state recorded.
	st := g.State()
	if st.State == nil {
		t.Fatal("no state after apply")
	}
	deps, err := cs.AppsV1().Deployments(g.Name).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wantImages := map[string]string{}
	for _, n := range []string{"web", "db", "cache"} {
		ns := st.State.Nodes[n]
		if ns == nil {
			t.Fatalf("state has no node %s", n)
		}
		repo := g.Env.Registry + "/" + g.Name + "/" + n
		if ns.Image.Ref != repo || !strings.HasPrefix(ns.Image.Digest, "sha256:") {
			t.Errorf("state image of %s: got %s@%s, want %s@sha256:…", n, ns.Image.Ref, ns.Image.Digest, repo)
		}
		wantImages[n] = repo + "@" + ns.Image.Digest
	}
	wantImages["web-worker"] = wantImages["web"] // a role without a service runs the node image
	gotImages := map[string]string{}
	for _, d := range deps.Items {
		gotImages[d.Name] = d.Spec.Template.Spec.Containers[0].Image
	}
	if diff := cmp.Diff(wantImages, gotImages); diff != "" {
		t.Errorf("Deployment images (-want +got):\n%s", diff)
	}

	// Claims are Bound.
	pvcs, err := cs.CoreV1().PersistentVolumeClaims(g.Name).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	gotClaims := map[string]corev1.PersistentVolumeClaimPhase{}
	for _, c := range pvcs.Items {
		gotClaims[c.Name] = c.Status.Phase
	}
	if diff := cmp.Diff(map[string]corev1.PersistentVolumeClaimPhase{"web-state": corev1.ClaimBound, "db-state": corev1.ClaimBound, "cache-state": corev1.ClaimBound}, gotClaims); diff != "" {
		t.Errorf("claims (-want +got):\n%s", diff)
	}

	// NetworkPolicies (SPEC §5, FR-010, FR-004f, FR-004h).
	nps, err := cs.NetworkingV1().NetworkPolicies(g.Name).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	gotPolicies := map[string][]string{}
	for _, np := range nps.Items {
		gotPolicies[np.Name] = policySummary(np)
	}
	// Every selector carries the deployment's own mark: a foreign pod with a node's name label
	// is neither selected nor a peer (issue 46 item 5).
	own := spec.LabelGroup + "=" + g.Name
	wantPolicies := map[string][]string{
		"default-deny": {"select={" + spec.LabelGroup + "=" + g.Name + "} types=[Ingress]"},
		"web": {"select={app.kubernetes.io/name=web," + own + "} types=[Ingress]",
			"from=[pods-of-ns 192.0.2.0/24] ports=[TCP/22 TCP/80 TCP/443]",
			"from=[0.0.0.0/0 ::/0] ports=[TCP/80 TCP/443]"},
		"db":    {"select={app.kubernetes.io/name=db," + own + "} types=[Ingress]", "from=[pods-of-ns] ports=[TCP/5432]"},
		"cache": {"select={app.kubernetes.io/name=cache," + own + "} types=[Ingress]", "from=[pods-of-ns] ports=[TCP/6379]"},
		"web-worker": {"select={app.kubernetes.io/name=web-worker," + own + "} types=[Ingress]",
			"from=[pods-of-ns 192.0.2.0/24] ports=[TCP/8080]"},
		"web-worker-metrics": {"select={app.kubernetes.io/name=web-worker," + own + "} types=[Ingress]",
			"from=[pod:app.kubernetes.io/name=web," + own + "] ports=[TCP/9101]"},
	}
	if diff := cmp.Diff(wantPolicies, gotPolicies); diff != "" {
		t.Errorf("NetworkPolicies (-want +got):\n%s", diff)
	}

	// Services: a LoadBalancer only for web (published and admin ports), the role's and its
	// headless metrics Service.
	svcs, err := cs.CoreV1().Services(g.Name).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	gotServices := map[string]string{}
	for _, s := range svcs.Items {
		gotServices[s.Name] = serviceSummary(s)
	}
	wantServices := map[string]string{
		"web":                "type=LoadBalancer etp=Local headless=false select=web ports=[tcp-22:22/TCP tcp-443:443/TCP tcp-80:80/TCP]",
		"web-worker":         "type=ClusterIP etp= headless=false select=web-worker ports=[tcp-8080:8080/TCP]",
		"web-worker-metrics": "type=ClusterIP etp= headless=true select=web-worker ports=[tcp-9101:9101/TCP]",
	}
	if diff := cmp.Diff(wantServices, gotServices); diff != "" {
		t.Errorf("Services (-want +got):\n%s", diff)
	}

	// Right after: no changes, and a second apply writes nothing and restarts no pod.
	r := g.MustRun(0, "plan", "--detailed-exitcode")
	if !strings.Contains(r.Stdout, "No changes.") {
		t.Fatalf("plan after apply: want No changes., got %s", r)
	}
	before := g.PodUIDs()
	c := g.CountRequests()
	r = g.MustRun(0, "apply", "--yes")
	if w := stored(c.Writes()); len(w) != 0 {
		t.Errorf("no-op apply made %d write requests: %v", len(w), w)
	}
	if !strings.Contains(r.Stdout, "No changes.") {
		t.Errorf("no-op apply: want No changes., got %s", r)
	}
	if diff := cmp.Diff(before, g.PodUIDs()); diff != "" {
		t.Errorf("pods after a no-op apply (-want +got):\n%s", diff)
	}
}

func policySummary(np networkingv1.NetworkPolicy) []string {
	var types []string
	for _, pt := range np.Spec.PolicyTypes {
		types = append(types, string(pt))
	}
	out := []string{fmt.Sprintf("select=%s types=%v", selectorString(np.Spec.PodSelector.MatchLabels), types)}
	for _, r := range np.Spec.Ingress {
		var from, ports []string
		for _, p := range r.From {
			switch {
			case p.IPBlock != nil:
				from = append(from, p.IPBlock.CIDR)
			case p.PodSelector != nil && len(p.PodSelector.MatchLabels) == 0:
				from = append(from, "pods-of-ns")
			case p.PodSelector != nil:
				from = append(from, "pod:"+strings.Trim(selectorString(p.PodSelector.MatchLabels), "{}"))
			default:
				from = append(from, "?")
			}
		}
		for _, p := range r.Ports {
			ports = append(ports, fmt.Sprintf("%s/%s", *p.Protocol, p.Port.String()))
		}
		out = append(out, fmt.Sprintf("from=%v ports=%v", from, ports))
	}
	return out
}

func selectorString(m map[string]string) string {
	var kv []string
	for k, v := range m {
		kv = append(kv, k+"="+v)
	}
	slices.Sort(kv)
	return "{" + strings.Join(kv, ",") + "}"
}

func serviceSummary(s corev1.Service) string {
	var ports []string
	for _, p := range s.Spec.Ports {
		ports = append(ports, fmt.Sprintf("%s:%d/%s", p.Name, p.Port, p.Protocol))
	}
	slices.Sort(ports)
	return fmt.Sprintf("type=%s etp=%s headless=%t select=%s ports=%v", s.Spec.Type, s.Spec.ExternalTrafficPolicy,
		s.Spec.ClusterIP == corev1.ClusterIPNone, s.Spec.Selector["app.kubernetes.io/name"], ports)
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
