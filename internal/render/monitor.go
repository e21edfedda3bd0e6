package render

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"slipway.dev/slipway/internal/spec"
)

// ServiceMonitor is the Prometheus Operator's kind (monitoring.coreos.com/v1). It is written
// as an unstructured object: the few fields slipway sets do not justify the operator's Go
// module, which brings controller-runtime and the apiextensions API with it.
const (
	ServiceMonitorAPIVersion = "monitoring.coreos.com/v1"
	ServiceMonitorKind       = "ServiceMonitor"
)

// serviceMonitors are the ServiceMonitors of a node's roles that ask for one, when the
// cluster has the kind (Input.ServiceMonitors): each scrapes its role's metrics Service, which
// carries spec.LabelMetrics so that the selector matches it alone.
func (r *renderer) serviceMonitors(n *spec.Node) []Object {
	if !r.in.ServiceMonitors {
		return nil
	}
	var out []Object
	for _, role := range n.Roles {
		if !role.ServiceMonitor || role.Metrics == nil {
			continue
		}
		labels := r.labels(spec.LabelNode, n.Name, spec.LabelRole, role.Name)
		selector := map[string]any{}
		for k, v := range r.labels(spec.LabelNode, n.Name, spec.LabelRole, role.Name, spec.LabelMetrics, "true") {
			selector[k] = v
		}
		meta := map[string]any{"name": spec.MetricsObjectName(n.Name, role.Name), "namespace": r.ns}
		metaLabels := map[string]any{}
		for k, v := range labels {
			metaLabels[k] = v
		}
		meta["labels"] = metaLabels
		out = append(out, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": ServiceMonitorAPIVersion,
			"kind":       ServiceMonitorKind,
			"metadata":   meta,
			"spec": map[string]any{
				"selector":          map[string]any{"matchLabels": selector},
				"namespaceSelector": map[string]any{"matchNames": []any{r.ns}},
				"endpoints":         []any{map[string]any{"port": role.Metrics.Name()}},
			},
		}})
	}
	return out
}
