package spec

import (
	"maps"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

func isLabel(s string, letterFirst bool) bool {
	if len(s) == 0 || len(s) > 63 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z':
		case c >= '0' && c <= '9':
			if i == 0 && letterFirst {
				return false
			}
		case c == '-':
			if i == 0 || i == len(s)-1 {
				return false
			}
		default:
			return false
		}
	}
	return true
}

func isSubdomain(s string) bool {
	if len(s) == 0 || len(s) > 253 {
		return false
	}
	for _, part := range strings.Split(s, ".") {
		if !isLabel(part, false) {
			return false
		}
	}
	return true
}

// isDNSName accepts a host name, or a wildcard one (*.example.org).
func isDNSName(s string) bool {
	return isSubdomain(strings.TrimPrefix(s, "*."))
}

// publishedNames reads a node's publishedNames: DNS names, none repeated.
func (d *decoder) publishedNames(v *yaml.Node, p string) []string {
	var out []string
	d.mark(p, deref(v))
	names, _ := d.strList(v, p)
	items := deref(v).Content
	for i, s := range names {
		d.mark(index(p, i), deref(items[i]))
		switch {
		case !isDNSName(s):
			d.errAt(deref(items[i]), index(p, i), "%q is not a DNS name", s)
		case slices.Contains(out, s):
			d.errAt(deref(items[i]), index(p, i), "name %s is repeated", s)
		default:
			out = append(out, s)
		}
	}
	return out
}

// validateNameOwners refuses a published name on two nodes (issue 35): both would claim its
// records, each retiring the other's on its next apply. The later one in the file is reported,
// naming the node that has it first; a name every node inherits from `defaults:` is reported
// there once. With or without `publish:`, as adding it later would otherwise turn a quiet file
// into a broken one.
func (d *decoder) validateNameOwners(g *Group) {
	type use struct {
		node, path, name string
		line             int
	}
	var uses []use
	for _, n := range g.Nodes {
		for i, name := range n.PublishedNames {
			p := index("nodes."+n.Name+".publishedNames", i)
			uses = append(uses, use{n.Name, p, name, d.lineOf(p)})
		}
	}
	slices.SortStableFunc(uses, func(a, b use) int { return a.line - b.line })
	fromDefaults, hasDefaults := d.lines["defaults.publishedNames"]
	first := map[string]use{}
	inherited := map[string][]string{} // name → the nodes that inherit it, when two or more do
	for _, u := range uses {
		o, seen := first[u.name]
		switch {
		case !seen:
			first[u.name] = u
		case hasDefaults && u.line == o.line && d.lineOf("nodes."+u.node+".publishedNames") == fromDefaults:
			inherited[u.name] = append(inherited[u.name], u.node)
		default:
			d.add(u.line, u.path, "name %s is also published by node %s (line %d): a name belongs to one node", u.name, o.node, o.line)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(inherited)) {
		nodes := append([]string{first[name].node}, inherited[name]...)
		d.add(fromDefaults, "defaults.publishedNames", "name %s would be published by every node that inherits it (%s): a name belongs to one node; set publishedNames on the node", name, strings.Join(nodes, ", "))
	}
}
