package engine

import (
	"context"
	"fmt"
	"strings"

	"slipway.dev/slipway/internal/kube"
	"slipway.dev/slipway/internal/spec"
)

// serviceMonitors says whether the roles that ask for a ServiceMonitor get one: only where
// the cluster serves the Prometheus Operator's kind. When it does not, the note says which
// roles go without and why; nothing fails. An error of discovery fails the plan instead: a
// ServiceMonitor left out for a passing error would be pruned.
func (e *Engine) serviceMonitors(ctx context.Context, g *spec.Group) (bool, string, error) {
	roles := monitoredRoles(g)
	if len(roles) == 0 {
		return false, "", nil
	}
	ok, err := e.o.Kube.ServesKind(ctx, kube.ServiceMonitorKind)
	if err != nil {
		return false, "", err
	}
	if ok {
		return true, "", nil
	}
	return false, fmt.Sprintf("no ServiceMonitor for %s: the cluster has no ServiceMonitor kind (monitoring.coreos.com/v1, the Prometheus Operator's CRD); apply makes them once it has",
		strings.Join(roles, ", ")), nil
}

// monitoredRoles names the roles with serviceMonitor: true, as "role r of node n".
func monitoredRoles(g *spec.Group) []string {
	var out []string
	for _, n := range g.Nodes {
		for _, r := range n.Roles {
			if r.ServiceMonitor && r.Metrics != nil {
				out = append(out, "role "+r.Name+" of node "+n.Name)
			}
		}
	}
	return out
}
