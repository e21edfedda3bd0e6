package e2e

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// reachGroup admits pods of other namespaces per port (the node's served ports, a role's port,
// a role's metrics port) and restricts egress: web and its roles to the listed peers, db to DNS
// and the group's own pods.
const reachGroup = `group: {{GROUP}}
defaults:
  state: {size: 1Gi}
nodes:
  web:
    image: {rootfs: nodes/web/rootfs}
    firewall:
      served: [443, 9100]
      published: [443]
      fromNamespaces:
        - {namespace: {kubernetes.io/metadata.name: ingress}, ports: [443, 8080]}
        - {namespace: {kubernetes.io/metadata.name: monitoring}, pods: {app: prometheus}, ports: [9100, 9101]}
      egress:
        - {cidr: 10.20.0.0/16, ports: [5432]}
        - {namespace: {kubernetes.io/metadata.name: vault}, pods: {app: vault}, ports: [8200, udp/8201]}
    roles:
      worker: {replicas: 1, ports: [8080], metrics: 9101}
      batch: {replicas: 1}
  db:
    image: {rootfs: nodes/db/rootfs}
    firewall: {served: [5432], egress: []}
`

// TestReachPolicies: the group applies; the NetworkPolicies in the cluster have the peers of
// fromNamespaces (namespaceSelector and podSelector, on the ports each policy has) and the
// egress rules the file says (the resolver of kube-system, the group's pods, the listed peers);
// the rendered stream passes a strict server-side dry run; a second plan has no changes.
func TestReachPolicies(t *testing.T) {
	t.Parallel()
	g := NewGroup(t, "reach", reachGroup, "web", "db")
	g.MustRun(0, "apply", "--yes")
	ctx := context.Background()

	stream := g.MustRun(0, "render").Stdout
	kubectl := exec.CommandContext(ctx, filepath.Join(g.Env.BinDir, "kubectl"), "--kubeconfig", g.Env.Kubeconfig,
		"apply", "--server-side", "--force-conflicts", "--field-manager", "reach-e2e", "--dry-run=server", "--validate=strict", "-f", "-")
	kubectl.Stdin = strings.NewReader(stream)
	var out, errb bytes.Buffer
	kubectl.Stdout, kubectl.Stderr = &out, &errb
	if err := kubectl.Run(); err != nil || errb.Len() > 0 {
		t.Fatalf("strict server-side dry run: %v\n%s%s", err, out.String(), errb.String())
	}
	if !strings.Contains(out.String(), "networkpolicy.networking.k8s.io/web-batch serverside-applied (server dry run)") {
		t.Errorf("the dry run did not cover the egress-only policy web-batch:\n%s", out.String())
	}

	list, err := g.Kube.Clientset.NetworkingV1().NetworkPolicies(g.Name).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{}
	for _, np := range list.Items {
		got[np.Name] = policyLines(np)
	}
	dns := "egress to ns{kubernetes.io/metadata.name=kube-system} pods{k8s-app=kube-dns} on udp/53 tcp/53"
	own := "egress to pods{slipway.dev/group=" + g.Name + "} on every port"
	webEgress := []string{dns, own,
		"egress to cidr 10.20.0.0/16 on tcp/5432",
		"egress to ns{kubernetes.io/metadata.name=vault} pods{app=vault} on tcp/8200 udp/8201",
	}
	want := map[string][]string{
		"default-deny": {"types Ingress"},
		"db":           {"types Ingress Egress", "ingress from pods{} on tcp/5432", dns, own},
		"web": append([]string{"types Ingress Egress",
			"ingress from pods{} on tcp/443 tcp/9100",
			"ingress from cidr 0.0.0.0/0, cidr ::/0 on tcp/443",
			"ingress from ns{kubernetes.io/metadata.name=ingress} on tcp/443",
			"ingress from ns{kubernetes.io/metadata.name=monitoring} pods{app=prometheus} on tcp/9100",
		}, webEgress...),
		"web-worker": append([]string{"types Ingress Egress",
			"ingress from pods{} on tcp/8080",
			"ingress from ns{kubernetes.io/metadata.name=ingress} on tcp/8080",
		}, webEgress...),
		"web-batch": append([]string{"types Ingress Egress"}, webEgress...),
		"web-worker-metrics": {"types Ingress",
			"ingress from pods{app.kubernetes.io/name=web,slipway.dev/group=" + g.Name + "} on tcp/9101", // only the deployment's own web (issue 46 item 5)
			"ingress from ns{kubernetes.io/metadata.name=monitoring} pods{app=prometheus} on tcp/9101",
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("NetworkPolicies in the cluster (-want +got):\n%s", diff)
	}
	if r := g.MustRun(0, "plan"); !strings.Contains(r.Stdout, "No changes.") {
		t.Errorf("plan after apply: want No changes., got %s", r)
	}

	// Without web's egress list its egress is open again: its policies lose their egress
	// rules, and web-batch, there only for them, is deleted.
	var open []string
	for _, l := range strings.Split(strings.ReplaceAll(reachGroup, "{{GROUP}}", g.Name), "\n") {
		if l != "      egress:" && !strings.Contains(l, "ports: [5432]}") && !strings.Contains(l, "app: vault") {
			open = append(open, l)
		}
	}
	g.WriteFile("slipway.yaml", strings.Join(open, "\n"))
	wantPlan := []string{"web: delete NetworkPolicy/web-batch", "web: update NetworkPolicy/web", "web: update NetworkPolicy/web-worker"}
	if diff := cmp.Diff(wantPlan, g.Plan().ChangeLines()); diff != "" {
		t.Errorf("plan without web's egress (-want +got):\n%s", diff)
	}
	g.MustRun(0, "apply", "--yes")
	list, err = g.Kube.Clientset.NetworkingV1().NetworkPolicies(g.Name).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, np := range list.Items {
		names = append(names, np.Name)
		if np.Name == "web" || np.Name == "web-worker" {
			if lines := policyLines(np); lines[0] != "types Ingress" || slices.ContainsFunc(lines, func(l string) bool { return strings.HasPrefix(l, "egress") }) {
				t.Errorf("%s after its egress list went: %q", np.Name, lines)
			}
		}
	}
	slices.Sort(names)
	if diff := cmp.Diff([]string{"db", "default-deny", "web", "web-worker", "web-worker-metrics"}, names); diff != "" {
		t.Errorf("NetworkPolicies after web's egress list went (-want +got):\n%s", diff)
	}
}

// policyLines writes a NetworkPolicy's types and rules one a line, in order.
func policyLines(np networkingv1.NetworkPolicy) []string {
	var types []string
	for _, pt := range np.Spec.PolicyTypes {
		types = append(types, string(pt))
	}
	out := []string{"types " + strings.Join(types, " ")}
	for _, r := range np.Spec.Ingress {
		out = append(out, "ingress from "+peersText(r.From)+" on "+portsText(r.Ports))
	}
	for _, r := range np.Spec.Egress {
		out = append(out, "egress to "+peersText(r.To)+" on "+portsText(r.Ports))
	}
	return out
}

func peersText(peers []networkingv1.NetworkPolicyPeer) string {
	var out []string
	for _, p := range peers {
		var parts []string
		if p.IPBlock != nil {
			parts = append(parts, "cidr "+p.IPBlock.CIDR)
		}
		if p.NamespaceSelector != nil {
			parts = append(parts, "ns"+selectorText(p.NamespaceSelector))
		}
		if p.PodSelector != nil {
			parts = append(parts, "pods"+selectorText(p.PodSelector))
		}
		out = append(out, strings.Join(parts, " "))
	}
	return strings.Join(out, ", ")
}

func selectorText(s *metav1.LabelSelector) string {
	var kv []string
	for _, k := range slices.Sorted(maps.Keys(s.MatchLabels)) {
		kv = append(kv, k+"="+s.MatchLabels[k])
	}
	if len(s.MatchExpressions) > 0 {
		kv = append(kv, fmt.Sprintf("expressions %v", s.MatchExpressions))
	}
	return "{" + strings.Join(kv, ",") + "}"
}

func portsText(ports []networkingv1.NetworkPolicyPort) string {
	if len(ports) == 0 {
		return "every port"
	}
	var out []string
	for _, p := range ports {
		proto := "tcp"
		if p.Protocol != nil {
			proto = strings.ToLower(string(*p.Protocol))
		}
		out = append(out, proto+"/"+p.Port.String())
	}
	return strings.Join(out, " ")
}
