package render

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"slipway.dev/slipway/internal/spec"
)

var npTypeMeta = metav1.TypeMeta{APIVersion: "networking.k8s.io/v1", Kind: "NetworkPolicy"}

// defaultDeny selects every pod of the group and lets nothing in (FR-010). Only the group's
// pods: in a namespace slipway did not create, the other pods there are not slipway's to
// isolate.
func (r *renderer) defaultDeny() *networkingv1.NetworkPolicy {
	return &networkingv1.NetworkPolicy{
		TypeMeta:   npTypeMeta,
		ObjectMeta: r.meta(spec.DefaultDenyPolicy, r.labels()),
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{spec.LabelGroup: r.in.Group.Name}},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
		},
	}
}

// Peers of the policies: the namespace's own pods, a set of CIDRs, everyone.
func namespacePods() networkingv1.NetworkPolicyPeer {
	return networkingv1.NetworkPolicyPeer{PodSelector: &metav1.LabelSelector{}}
}

func cidrPeers(lists ...[]string) []networkingv1.NetworkPolicyPeer {
	var out []networkingv1.NetworkPolicyPeer
	var seen []string
	for _, list := range lists {
		for _, c := range list {
			if slices.Contains(seen, c) {
				continue
			}
			seen = append(seen, c)
			out = append(out, networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: c}})
		}
	}
	return out
}

func policyPorts(lists ...[]spec.Port) []networkingv1.NetworkPolicyPort {
	var out []networkingv1.NetworkPolicyPort
	var seen []spec.Port
	for _, list := range lists {
		for _, p := range list {
			if slices.Contains(seen, p) {
				continue
			}
			seen = append(seen, p)
			proto := corev1.Protocol(p.Protocol)
			port := intstr.FromInt32(p.Number)
			out = append(out, networkingv1.NetworkPolicyPort{Protocol: &proto, Port: &port})
		}
	}
	return out
}

// rule is an ingress rule, or nil when it would have no peer or no port: in a NetworkPolicy
// an empty list means "all", the opposite of what an empty firewall list means.
func rule(from []networkingv1.NetworkPolicyPeer, ports []networkingv1.NetworkPolicyPort) []networkingv1.NetworkPolicyIngressRule {
	if len(from) == 0 || len(ports) == 0 {
		return nil
	}
	return []networkingv1.NetworkPolicyIngressRule{{From: from, Ports: ports}}
}

// nodePolicy is the node's firewall (SPEC §5, FR-010): the namespace's pods, internalSources
// and adminSources reach every served port; everyone reaches the published ports;
// operatorSources reach the operator and published ports.
func (r *renderer) nodePolicy(n *spec.Node) *networkingv1.NetworkPolicy {
	fw := n.Firewall
	var rules []networkingv1.NetworkPolicyIngressRule
	rules = append(rules, rule(
		append([]networkingv1.NetworkPolicyPeer{namespacePods()}, cidrPeers(fw.InternalSources, fw.AdminSources)...),
		policyPorts(fw.Served))...)
	rules = append(rules, rule(cidrPeers([]string{"0.0.0.0/0", "::/0"}), policyPorts(fw.Published))...)
	rules = append(rules, rule(cidrPeers(fw.OperatorSources), policyPorts(fw.Operator, fw.Published))...)
	rules = append(rules, fromNamespaces(fw, fw.Served)...)
	return r.withEgress(&networkingv1.NetworkPolicy{
		TypeMeta:   npTypeMeta,
		ObjectMeta: r.meta(n.Name, r.labels(spec.LabelNode, n.Name)),
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: r.podsOf(n.Name)},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
			Ingress:     rules,
		},
	}, fw)
}

// rolePolicy lets the namespace's pods and the node's internal and admin sources reach the
// role's ports, and nothing else (FR-004f, FR-004i: never the world), beside the node's
// fromNamespaces on those ports; the role's pods take the node's egress.
func (r *renderer) rolePolicy(n *spec.Node, role *spec.Role) *networkingv1.NetworkPolicy {
	name := spec.RoleObjectName(n.Name, role.Name)
	fw := n.Firewall
	rules := rule(append([]networkingv1.NetworkPolicyPeer{namespacePods()}, cidrPeers(fw.InternalSources, fw.AdminSources)...),
		policyPorts(role.Ports))
	return r.withEgress(&networkingv1.NetworkPolicy{
		TypeMeta:   npTypeMeta,
		ObjectMeta: r.meta(name, r.labels(spec.LabelNode, n.Name, spec.LabelRole, role.Name)),
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: r.podsOf(name)},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
			Ingress:     append(rules, fromNamespaces(fw, role.Ports)...),
		},
	}, fw)
}

// metricsPolicy lets only the node's main pod reach the role's metrics port (FR-004h), and the
// node's fromNamespaces entries that name that port (a Prometheus of another namespace).
func (r *renderer) metricsPolicy(n *spec.Node, role *spec.Role) *networkingv1.NetworkPolicy {
	return &networkingv1.NetworkPolicy{
		TypeMeta:   npTypeMeta,
		ObjectMeta: r.meta(spec.MetricsObjectName(n.Name, role.Name), r.labels(spec.LabelNode, n.Name, spec.LabelRole, role.Name)),
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: r.podsOf(spec.RoleObjectName(n.Name, role.Name))},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
			Ingress: append(rule([]networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{MatchLabels: r.podsOf(n.Name)}}},
				policyPorts([]spec.Port{*role.Metrics})), fromNamespaces(n.Firewall, []spec.Port{*role.Metrics})...),
		},
	}
}
