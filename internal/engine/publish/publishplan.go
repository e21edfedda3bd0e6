package publish

import (
	"context"
	"maps"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"slipway.dev/slipway/internal/engine/lane"
	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/spec"
)

// publishPlan is the address lane's part of a plan (SPEC §7): it fails, naming the Gateway
// and what is missing, when the Gateway cannot take the nodes behind it, and says each
// published node's address as far as it is known now. Without `publish:` it reads nothing.
func (l *Lane) publishPlan(ctx context.Context, t lane.Target, live map[plan.Key]plan.Object, ns *unstructured.Unstructured) (map[string][]string, error) {
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
			if svc := lane.AsTyped[corev1.Service](live[plan.Key{Kind: "Service", Namespace: t.Namespace, Name: n.Name}]); svc != nil && svc.Spec.Type == corev1.ServiceTypeLoadBalancer {
				addrs[n.Name] = serviceIngress(svc)
			}
		}
	}
	if len(behind) == 0 {
		return addrs, nil
	}
	gw, class, err := l.kube.Gateway(ctx, pub.Gateway.Namespace, pub.Gateway.Name)
	if err != nil {
		return nil, err
	}
	if err := checkGateway(*pub.Gateway, gw, class, t.Namespace, namespaceLabels(t, ns), behind); err != nil {
		return nil, err
	}
	for _, n := range behind {
		addrs[n.Name] = gatewayAddresses(gw)
	}
	return addrs, nil
}

// namespaceLabels are the labels the group's namespace has once apply made it: the live
// ones, else those render gives it and the one the API server adds.
func namespaceLabels(t lane.Target, live *unstructured.Unstructured) map[string]string {
	out := map[string]string{"kubernetes.io/metadata.name": t.Namespace}
	if live != nil {
		maps.Copy(out, live.GetLabels())
		return out
	}
	out[spec.LabelManagedBy] = spec.ManagedBy
	out[spec.LabelGroup] = t.Group.Name
	return out
}
