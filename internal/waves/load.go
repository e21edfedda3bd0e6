package waves

import (
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// label is an RFC 1123 label, as group names and targets must be.
var label = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)

var topFields = []string{"groups"}
var groupFields = []string{"name", "file", "target", "state", "dependsOn"}

// mapping returns n's keys and values, refusing a duplicate or unknown key.
func (l *loader) mapping(n *yaml.Node, path string, known []string) map[string]*yaml.Node {
	if n.Kind != yaml.MappingNode {
		l.add(n.Line, path, "must be a mapping, not %s", kind(n))
		return nil
	}
	out := map[string]*yaml.Node{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		p := join(path, k.Value)
		switch {
		case out[k.Value] != nil:
			l.add(k.Line, p, "written twice")
		case !slices.Contains(known, k.Value):
			l.add(k.Line, p, "unknown field (fields: %s)", strings.Join(known, ", "))
		default:
			out[k.Value] = v
		}
	}
	return out
}

func (l *loader) file(doc *yaml.Node) []*Group {
	if len(doc.Content) != 1 {
		l.add(1, "groups", "the file is empty")
		return nil
	}
	m := l.mapping(doc.Content[0], "", topFields)
	list := m["groups"]
	if list == nil {
		if m != nil {
			l.add(doc.Content[0].Line, "groups", "required: the groups, each a group file")
		}
		return nil
	}
	if list.Kind != yaml.SequenceNode || len(list.Content) == 0 {
		l.add(list.Line, "groups", "must be a list of groups, not %s", kind(list))
		return nil
	}
	var out []*Group
	for i, item := range list.Content {
		if g := l.group(item, "groups["+strconv.Itoa(i)+"]"); g != nil {
			out = append(out, g)
		}
	}
	return out
}

func (l *loader) group(n *yaml.Node, path string) *Group {
	m := l.mapping(n, path, groupFields)
	if m == nil {
		return nil
	}
	g := &Group{Line: n.Line, Target: TargetAll, fileLine: n.Line, targetLn: n.Line}
	g.Name = l.str(m, n, path, "name", true)
	if g.Name != "" && !label.MatchString(g.Name) {
		l.add(m["name"].Line, path+".name", "%q is not a DNS label (lowercase letters, digits and '-', starting and ending with a letter or digit, at most 63 characters)", g.Name)
	}
	if f := l.str(m, n, path, "file", true); f != "" {
		if !filepath.IsAbs(f) {
			f = filepath.Join(l.dir, f)
		}
		g.File, g.fileLine = filepath.Clean(f), m["file"].Line
	}
	if t := l.str(m, n, path, "target", false); t != "" {
		if !label.MatchString(t) {
			l.add(m["target"].Line, path+".target", "%q is not all or an app's name (a DNS label)", t)
		}
		g.Target, g.targetLn = t, m["target"].Line
	}
	g.State = l.str(m, n, path, "state", false)
	if v := m["dependsOn"]; v != nil {
		if v.Kind != yaml.SequenceNode {
			l.add(v.Line, path+".dependsOn", "must be a list of group names, not %s", kind(v))
		}
		for _, d := range v.Content {
			if d.Kind != yaml.ScalarNode || d.Tag != "!!str" {
				l.add(d.Line, path+".dependsOn", "must be a group's name, not %s", kind(d))
				continue
			}
			g.DependsOn = append(g.DependsOn, d.Value)
			g.depLines = append(g.depLines, d.Line)
		}
	}
	return g
}

// str reads a string field; a required one missing is reported at its mapping.
func (l *loader) str(m map[string]*yaml.Node, parent *yaml.Node, path, field string, required bool) string {
	v := m[field]
	if v == nil {
		if required {
			l.add(parent.Line, path, "%s is required", field)
		}
		return ""
	}
	if v.Kind != yaml.ScalarNode || v.Tag != "!!str" || v.Value == "" {
		l.add(v.Line, path+"."+field, "must be a string that is not empty, not %s", kind(v))
		return ""
	}
	return v.Value
}

func kind(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		if len(n.Content) == 0 {
			return "an empty list"
		}
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	}
	if n.Value == "" {
		return "nothing"
	}
	return strings.TrimPrefix(n.Tag, "!!") + " " + n.Value
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}
