package engine

import (
	"context"
	"maps"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/spec"
)

// publishPlan is the address lane's part of a plan (SPEC §7): it fails, naming the Gateway
// and what is missing, when the Gateway cannot take the nodes behind it, and says each
// published node's address as far as it is known now. Without `publish:` it reads nothing.
func (e *Engine) publishPlan(ctx context.Context, t Target, l listed) (map[string][]string, error) {
	pub := t.Group.Publish
	if pub == nil {
		return nil, nil
	}
	addrs := map[string][]string{}
	var behind []*spec.Node
	for _, n := range t.Group.Nodes {
		switch t.Group.AddressModeOf(n) {
		case spec.BehindGateway:
			behind = append(behind, n)
		case spec.OwnAddress:
			if svc := asTyped[corev1.Service](l.live[plan.Key{Kind: "Service", Namespace: t.Namespace, Name: n.Name}]); svc != nil && svc.Spec.Type == corev1.ServiceTypeLoadBalancer {
				addrs[n.Name] = serviceIngress(svc)
			}
		}
	}
	if len(behind) == 0 {
		return addrs, nil
	}
	gw, class, err := e.o.Kube.Gateway(ctx, pub.Gateway.Namespace, pub.Gateway.Name)
	if err != nil {
		return nil, err
	}
	if err := checkGateway(*pub.Gateway, gw, class, t.Namespace, namespaceLabels(t, l.ns), behind); err != nil {
		return nil, err
	}
	for _, n := range behind {
		addrs[n.Name] = gatewayAddresses(gw)
	}
	return addrs, nil
}

// namespaceLabels are the labels the group's namespace has once apply made it: the live
// ones, else those render gives it and the one the API server adds.
func namespaceLabels(t Target, live *unstructured.Unstructured) map[string]string {
	out := map[string]string{"kubernetes.io/metadata.name": t.Namespace}
	if live != nil {
		maps.Copy(out, live.GetLabels())
		return out
	}
	out[spec.LabelManagedBy] = spec.ManagedBy
	out[spec.LabelGroup] = t.Group.Name
	return out
}

// isLoadBalancer reports whether svc is a LoadBalancer Service: a ClusterIP one left by a
// node that moves away from the Gateway has no address of its own.
func isLoadBalancer(svc *unstructured.Unstructured) bool {
	t, _, _ := unstructured.NestedString(svc.Object, "spec", "type")
	return t == "LoadBalancer"
}

// serviceTypeChange says why a Service must be replaced rather than updated: its type changes
// between LoadBalancer and ClusterIP (a node moves behind the Gateway or away from it), and a
// re-created Service takes no field of the old type along. "" when it does not.
func serviceTypeChange(desired, live *unstructured.Unstructured) string {
	if live == nil || desired.GetKind() != "Service" {
		return ""
	}
	want, _, _ := unstructured.NestedString(desired.Object, "spec", "type")
	have, _, _ := unstructured.NestedString(live.Object, "spec", "type")
	if want == have || have == "" {
		return ""
	}
	return "its type changes from " + have + " to " + want
}
