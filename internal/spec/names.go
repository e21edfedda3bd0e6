package spec

import (
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
