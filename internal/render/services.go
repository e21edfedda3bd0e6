package render

import (
	"maps"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"slipway.dev/slipway/internal/spec"
)

func servicePorts(ports []spec.Port) []corev1.ServicePort {
	out := make([]corev1.ServicePort, len(ports))
	for i, p := range ports {
		out[i] = corev1.ServicePort{
			Name:       p.Name(),
			Protocol:   corev1.Protocol(p.Protocol),
			Port:       p.Number,
			TargetPort: intstr.FromInt32(p.Number),
		}
	}
	return out
}

var svcTypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Service"}

// nodeService exposes exactly the published, admin and operator ports (FR-018); Local keeps
// the client's address, which the NetworkPolicy's ipBlocks need.
func (r *renderer) nodeService(n *spec.Node, ports []spec.Port) *corev1.Service {
	meta := r.meta(n.Name, r.labels(spec.LabelNode, n.Name))
	if len(n.ServiceAnnotations) > 0 {
		meta.Annotations = maps.Clone(n.ServiceAnnotations)
	}
	return &corev1.Service{
		TypeMeta:   svcTypeMeta,
		ObjectMeta: meta,
		Spec: corev1.ServiceSpec{
			Type:                  corev1.ServiceTypeLoadBalancer,
			ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyLocal,
			Selector:              r.podsOf(n.Name),
			Ports:                 servicePorts(ports),
		},
	}
}

func (r *renderer) roleService(n *spec.Node, role *spec.Role) *corev1.Service {
	name := spec.RoleObjectName(n.Name, role.Name)
	return &corev1.Service{
		TypeMeta:   svcTypeMeta,
		ObjectMeta: r.meta(name, r.labels(spec.LabelNode, n.Name, spec.LabelRole, role.Name)),
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeClusterIP,
			Selector: r.podsOf(name),
			Ports:    servicePorts(role.Ports),
		},
	}
}

// metricsService is a role's headless metrics Service; a role with serviceMonitor labels it
// for its ServiceMonitor's selector (its other Service has the same labels otherwise).
func (r *renderer) metricsService(n *spec.Node, role *spec.Role) *corev1.Service {
	labels := r.labels(spec.LabelNode, n.Name, spec.LabelRole, role.Name)
	if role.ServiceMonitor {
		labels[spec.LabelMetrics] = "true"
	}
	return &corev1.Service{
		TypeMeta:   svcTypeMeta,
		ObjectMeta: r.meta(spec.MetricsObjectName(n.Name, role.Name), labels),
		Spec: corev1.ServiceSpec{
			Type:      corev1.ServiceTypeClusterIP,
			ClusterIP: corev1.ClusterIPNone,
			Selector:  r.podsOf(spec.RoleObjectName(n.Name, role.Name)),
			Ports:     servicePorts([]spec.Port{*role.Metrics}),
		},
	}
}
