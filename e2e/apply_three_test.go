package e2e

// A first apply of three nodes on the dev cluster: pods, images, claims, and the policies and
// Services of SPEC §5.

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"slipway.dev/slipway/internal/spec"
)

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
