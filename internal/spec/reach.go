package spec

import (
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// peers reads fromNamespaces or egress (known says which): a list of peers, each with its
// ports. egress is present even when empty (DNS only), so an empty list is kept non-nil.
func (d *decoder) peers(n *yaml.Node, path string, known *section) []Peer {
	items, ok := d.seq(n, path)
	if !ok {
		return []Peer{}
	}
	d.mark(path, deref(n))
	out := make([]Peer, 0, len(items))
	for i, it := range items {
		// Kept even when wrong (the group is then refused), so index i is the file's.
		out = append(out, d.peer(it, index(path, i), known))
	}
	return out
}

func (d *decoder) peer(n *yaml.Node, path string, known *section) Peer {
	var p Peer
	m, ok := d.mapping(n, path, known)
	if !ok {
		return p
	}
	switch cv, nv := m["cidr"], m["namespace"]; {
	case cv != nil && nv != nil:
		d.errAt(deref(n), path, "has cidr and namespace; set one")
		return p
	case cv != nil:
		p.CIDR, _ = d.cidr(cv, path+".cidr")
		if m["pods"] != nil {
			d.errAt(deref(m["pods"]), path+".pods", "needs namespace (a cidr has no pods)")
		}
	case nv != nil:
		p.Namespace = d.selector(nv, path+".namespace", "namespace selector")
	case known == egressFields:
		d.lacks(deref(n), path, "", "needs cidr or namespace")
		return p
	default:
		d.lacks(deref(n), path, "namespace", "is required")
		return p
	}
	if v := m["pods"]; v != nil && m["cidr"] == nil {
		p.Pods = d.selector(v, path+".pods", "pod selector")
	}
	v := m["ports"]
	if v == nil {
		d.lacks(deref(n), path, "ports", "is required")
		return p
	}
	p.Ports = d.portList(v, path+".ports")
	if items := deref(v); items.Kind == yaml.SequenceNode && len(items.Content) == 0 {
		d.errAt(items, path+".ports", "needs at least one port")
	}
	return p
}

// selector reads labels a peer must have; an empty selector would match every namespace (or
// every pod), which a firewall rule should say on purpose, so it is refused.
func (d *decoder) selector(n *yaml.Node, path, kind string) map[string]string {
	m := d.stringMap(n, path, kind)
	if deref(n).Kind == yaml.MappingNode && len(deref(n).Content) == 0 {
		d.errAt(deref(n), path, "needs at least one label (an empty %s matches everything)", kind)
	}
	return m
}

// validateReach checks that each port of fromNamespaces reaches something of the node: a
// served port, or a port or metrics port of one of its roles.
func (d *decoder) validateReach(n *Node, path string) {
	var ports []Port
	ports = append(ports, n.Firewall.Served...)
	for _, r := range n.Roles {
		ports = append(ports, r.Ports...)
		if r.Metrics != nil {
			ports = append(ports, *r.Metrics)
		}
	}
	for i, p := range n.Firewall.FromNamespaces {
		pp := index(path+".firewall.fromNamespaces", i) + ".ports"
		// A port the loader refused is not in p.Ports, so j would not be the file's index.
		if slices.ContainsFunc(d.errs, func(e Error) bool { return strings.HasPrefix(e.Path, pp) }) {
			continue
		}
		for j, port := range p.Ports {
			if !slices.Contains(ports, port) {
				d.errPath(index(pp, j), "port %s is not served by node %s nor a port of its roles", port, n.Name)
			}
		}
	}
}
