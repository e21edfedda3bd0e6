package spec

import (
	"slices"
)

// Labels of SPEC §5, on every object slipway makes: render sets them, plan, the engine and the
// state's Kubernetes backend read them. Pods are selected by LabelName alone, so a selector
// never changes when other labels do (a Deployment's selector is immutable).
const (
	LabelManagedBy = "app.kubernetes.io/managed-by"
	ManagedBy      = "slipway"
	LabelGroup     = "slipway.dev/group"
	LabelName      = "app.kubernetes.io/name"
	LabelNode      = "slipway.dev/node"
	LabelRole      = "slipway.dev/role"
	// LabelMetrics marks a metrics Service that a ServiceMonitor selects.
	LabelMetrics = "slipway.dev/metrics"
)

// Names of the objects slipway derives from a group (SPEC §5). render uses these, so a name
// validated here is the name rendered.
const DefaultDenyPolicy = "default-deny"

// ClaimName is the PersistentVolumeClaim of a node's state.
func ClaimName(node string) string { return node + "-state" }

// ServiceAccountName is the ServiceAccount of a node's pods.
func ServiceAccountName(node string) string { return "node-" + node }

// RoleObjectName is the Deployment, Service and NetworkPolicy of a role, and the key of a
// service role's image.
func RoleObjectName(node, role string) string { return node + "-" + role }

// MetricsObjectName is the headless Service and NetworkPolicy of a role's metrics port.
func MetricsObjectName(node, role string) string { return node + "-" + role + "-metrics" }

// derived is one object name a node or role makes.
type derived struct {
	kind, name string
}

func nodeObjects(n *Node) []derived {
	return append([]derived{
		{"ServiceAccount", ServiceAccountName(n.Name)},
		{"PersistentVolumeClaim", ClaimName(n.Name)},
		{"Deployment", n.Name},
		{"Service", n.Name},
		{"NetworkPolicy", n.Name},
		{"PodDisruptionBudget", n.Name},
	}, inputObjects(&n.PodInputs)...)
}

func roleObjects(n *Node, r *Role) []derived {
	out := []derived{
		{"Deployment", RoleObjectName(n.Name, r.Name)},
		{"Service", RoleObjectName(n.Name, r.Name)},
		{"NetworkPolicy", RoleObjectName(n.Name, r.Name)},
		{"PodDisruptionBudget", RoleObjectName(n.Name, r.Name)},
	}
	if r.Metrics != nil {
		out = append(out,
			derived{"Service", MetricsObjectName(n.Name, r.Name)},
			derived{"NetworkPolicy", MetricsObjectName(n.Name, r.Name)})
	}
	if r.ServiceMonitor {
		out = append(out, derived{"ServiceMonitor", MetricsObjectName(n.Name, r.Name)})
	}
	return append(out, inputObjects(&r.PodInputs)...)
}

// validate checks what holds across fields and across nodes, once defaults are merged.
func (d *decoder) validate(g *Group) {
	// owner is who made a name first: a node, or a role of a node.
	type owner struct{ path, node, role string }
	describe := func(o owner) string {
		switch {
		case o.node == "":
			return "the group's default-deny policy"
		case o.role == "":
			return "node " + o.node
		}
		return "role " + o.role + " of node " + o.node
	}
	// Claimed names per kind; `default-deny` is the group's own policy.
	taken := make(map[derived]owner, 1+len(g.Nodes)*8)
	taken[derived{"NetworkPolicy", DefaultDenyPolicy}] = owner{}
	claim := func(who owner, objs []derived) {
		var longest derived
		for _, o := range objs {
			if len(o.name) > len(longest.name) {
				longest = o
			}
		}
		if len(longest.name) > 63 {
			d.errPath(who.path, "name %q of its %s is %d characters, more than 63", longest.name, longest.kind, len(longest.name))
		}
		var reported []string // one error per pair of owners, not one per kind
		for _, o := range objs {
			if first, ok := taken[o]; ok && first.path != who.path {
				if !slices.Contains(reported, first.path) {
					reported = append(reported, first.path)
					d.errPath(who.path, "%s %s collides with the one of %s", o.kind, o.name, describe(first))
				}
				continue
			}
			taken[o] = who
		}
	}
	for _, n := range g.Nodes {
		path := "nodes." + n.Name
		claim(owner{path, n.Name, ""}, nodeObjects(n))
		for _, r := range n.Roles {
			claim(owner{path + ".roles." + r.Name, n.Name, r.Name}, roleObjects(n, r))
		}
		d.validateNode(n, path)
	}
}

func (d *decoder) validateNode(n *Node, path string) {
	fw := n.Firewall
	for _, c := range []struct {
		field string
		ports []Port
	}{{"published", fw.Published}, {"admin", fw.Admin}, {"operator", fw.Operator}} {
		for i, p := range c.ports {
			if !slices.Contains(fw.Served, p) {
				d.errPath(index(path+".firewall."+c.field, i), "port %s is not served", p)
			}
		}
	}
	for name, req := range n.Resources.Requests {
		if lim, ok := n.Resources.Limits[name]; ok && req.Cmp(lim) > 0 {
			d.errPath(path+".resources.requests."+string(name), "request %s is more than the limit %s", req.String(), lim.String())
		}
	}
	d.validateWorkload(n, path)
	d.validateReach(n, path)
	d.validateRefs(&n.PodInputs, path)
	for _, r := range n.Roles {
		d.validateRefs(&r.PodInputs, path+".roles."+r.Name)
		d.validateServiceEnv(r, path+".roles."+r.Name)
		d.validateSidecar(n, r, path+".roles."+r.Name)
	}
}

// IsDNSLabel reports whether s is an RFC 1123 label, as a namespace name must be: lowercase
// letters, digits and '-', starting and ending with a letter or digit, at most 63 characters.
func IsDNSLabel(s string) bool { return isLabel(s, false) }

// IsSubdomain reports whether s is an RFC 1123 subdomain, as most object names must be.
func IsSubdomain(s string) bool { return isSubdomain(s) }
