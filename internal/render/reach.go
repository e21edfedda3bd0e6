package render

import (
	"slices"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"slipway.dev/slipway/internal/spec"
)

// The cluster's resolver, as kubeadm, kind and k3s label it: the pods every egress policy lets
// the node reach on port 53, since without names nothing else it may reach is usable.
var (
	resolverNamespace = map[string]string{"kubernetes.io/metadata.name": "kube-system"}
	resolverPods      = map[string]string{"k8s-app": "kube-dns"}
)

// peer is pods of the namespaces whose labels match, and of those only the pods that match
// p.Pods when set; or a CIDR.
func peer(p spec.Peer) networkingv1.NetworkPolicyPeer {
	if p.CIDR != "" {
		return networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: p.CIDR}}
	}
	out := networkingv1.NetworkPolicyPeer{NamespaceSelector: &metav1.LabelSelector{MatchLabels: p.Namespace}}
	if len(p.Pods) > 0 {
		out.PodSelector = &metav1.LabelSelector{MatchLabels: p.Pods}
	}
	return out
}

// fromNamespaces are the ingress rules of the node's fromNamespaces for a policy whose pods
// have ports: an entry's ports that the policy does not have belong to another policy.
func fromNamespaces(fw spec.Firewall, ports []spec.Port) []networkingv1.NetworkPolicyIngressRule {
	var out []networkingv1.NetworkPolicyIngressRule
	for _, p := range fw.FromNamespaces {
		var own []spec.Port
		for _, port := range p.Ports {
			if slices.Contains(ports, port) {
				own = append(own, port)
			}
		}
		out = append(out, rule([]networkingv1.NetworkPolicyPeer{peer(p)}, policyPorts(own))...)
	}
	return out
}

// withEgress restricts the egress of np's pods when the node's firewall has an egress list:
// the resolver on port 53, the group's own pods (their own policies say on which ports), and
// each listed peer on its ports.
func (r *renderer) withEgress(np *networkingv1.NetworkPolicy, fw spec.Firewall) *networkingv1.NetworkPolicy {
	if fw.Egress == nil {
		return np
	}
	dns := []spec.Port{{Protocol: spec.UDP, Number: 53}, {Protocol: spec.TCP, Number: 53}}
	rules := []networkingv1.NetworkPolicyEgressRule{
		{
			To: []networkingv1.NetworkPolicyPeer{{
				NamespaceSelector: &metav1.LabelSelector{MatchLabels: resolverNamespace},
				PodSelector:       &metav1.LabelSelector{MatchLabels: resolverPods},
			}},
			Ports: policyPorts(dns),
		},
		{To: []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{spec.LabelGroup: r.in.Group.Name}}}}},
	}
	for _, p := range fw.Egress {
		rules = append(rules, networkingv1.NetworkPolicyEgressRule{To: []networkingv1.NetworkPolicyPeer{peer(p)}, Ports: policyPorts(p.Ports)})
	}
	np.Spec.PolicyTypes = append(np.Spec.PolicyTypes, networkingv1.PolicyTypeEgress)
	np.Spec.Egress = rules
	return np
}
