package render

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"slipway.dev/slipway/internal/spec"
)

// Route kinds of a node behind the Gateway (SPEC §7), Gateway API v1.
const (
	GatewayGroup  = gwv1.GroupName
	KindTLSRoute  = "TLSRoute"
	KindHTTPRoute = "HTTPRoute"
)

var (
	tlsRouteTypeMeta  = metav1.TypeMeta{APIVersion: gwv1.GroupVersion.String(), Kind: KindTLSRoute}
	httpRouteTypeMeta = metav1.TypeMeta{APIVersion: gwv1.GroupVersion.String(), Kind: KindHTTPRoute}
)

// gatewayService is the Service `<node>` of a node behind the Gateway: a ClusterIP the routes
// send to, with the same ports as its LoadBalancer would have had (admin ports stay reachable
// from inside the cluster).
func (r *renderer) gatewayService(n *spec.Node, ports []spec.Port) *corev1.Service {
	s := r.nodeService(n, ports)
	s.Spec.Type = corev1.ServiceTypeClusterIP
	s.Spec.ExternalTrafficPolicy = ""
	return s
}

// routes are the TLSRoute `<node>` (443, passed through) and, when 80 is published, the
// HTTPRoute `<node>`, on the group's Gateway with the node's published names as hostnames.
func (r *renderer) routes(n *spec.Node) []Object {
	gw := r.in.Group.Publish.Gateway
	parent := gwv1.ParentReference{
		Group:     ptr.To(gwv1.Group(GatewayGroup)),
		Kind:      ptr.To(gwv1.Kind("Gateway")),
		Namespace: ptr.To(gwv1.Namespace(gw.Namespace)),
		Name:      gwv1.ObjectName(gw.Name),
	}
	hosts := make([]gwv1.Hostname, len(n.PublishedNames))
	for i, h := range n.PublishedNames {
		hosts[i] = gwv1.Hostname(h)
	}
	backend := func(port int32) gwv1.BackendRef {
		return gwv1.BackendRef{BackendObjectReference: gwv1.BackendObjectReference{
			Group: ptr.To(gwv1.Group("")), Kind: ptr.To(gwv1.Kind("Service")),
			Name: gwv1.ObjectName(n.Name), Port: ptr.To(gwv1.PortNumber(port)),
		}}
	}
	meta := func() metav1.ObjectMeta { return r.meta(n.Name, r.labels(spec.LabelNode, n.Name)) }
	out := []Object{&gwv1.TLSRoute{
		TypeMeta:   tlsRouteTypeMeta,
		ObjectMeta: meta(),
		Spec: gwv1.TLSRouteSpec{
			CommonRouteSpec: gwv1.CommonRouteSpec{ParentRefs: []gwv1.ParentReference{parent}},
			Hostnames:       hosts,
			Rules:           []gwv1.TLSRouteRule{{BackendRefs: []gwv1.BackendRef{backend(443)}}},
		},
	}}
	if publishes(n, 80) {
		out = append(out, &gwv1.HTTPRoute{
			TypeMeta:   httpRouteTypeMeta,
			ObjectMeta: meta(),
			Spec: gwv1.HTTPRouteSpec{
				CommonRouteSpec: gwv1.CommonRouteSpec{ParentRefs: []gwv1.ParentReference{parent}},
				Hostnames:       hosts,
				Rules:           []gwv1.HTTPRouteRule{{BackendRefs: []gwv1.HTTPBackendRef{{BackendRef: backend(80)}}}},
			},
		})
	}
	return out
}

// publishes reports whether n publishes TCP port.
func publishes(n *spec.Node, port int32) bool {
	for _, p := range n.Firewall.Published {
		if p.Protocol == spec.TCP && p.Number == port {
			return true
		}
	}
	return false
}
