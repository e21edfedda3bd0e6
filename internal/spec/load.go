package spec

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"slipway.dev/slipway/internal/realpath"
)

// Load reads the group file at path, merges defaults and validates it. Relative image paths
// are resolved against the file's directory. A file with problems gives Errors holding all
// of them; an unreadable file gives a plain error.
func Load(path string) (*Group, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("group file %s: %w", path, err)
	}
	return Parse(path, data, filepath.Dir(path))
}

// Parse is Load on bytes: name is the file name errors carry, baseDir the directory relative
// image paths are resolved against.
func Parse(name string, data []byte, baseDir string) (*Group, error) {
	dir, err := filepath.Abs(baseDir)
	if err != nil {
		return nil, fmt.Errorf("group file %s: base directory %s: %w", name, baseDir, err)
	}
	d := &decoder{file: name, dir: dir, lines: make(map[string]int), misspelt: make(map[string]bool)}
	g := d.group(data)
	if len(d.errs) > 0 {
		return nil, d.errs.sorted()
	}
	return g, nil
}

// Keys whose mappings merge key by key with `defaults:` (a node's own key wins); any other
// field is taken whole, from the node when it has it, else from the defaults. An image or a
// probe is taken whole because "exactly one source" must hold for what the node wrote.
var (
	deepNodeKeys = deepKeys{
		"state": nil, "firewall": nil, "env": nil, "resources": {"requests": nil, "limits": nil},
		"labels": nil, "annotations": nil, "serviceAnnotations": nil,
	}
)

// deepKeys names the keys merged key by key, and for each the keys merged so below it.
type deepKeys map[string]deepKeys

type decoder struct {
	file  string
	dir   string
	errs  Errors
	lines map[string]int // field path → line, for checks across fields
	// misspelt holds the paths of the mappings that have a key their section does not know.
	misspelt map[string]bool
	// fromDefaults holds every YAML node of `defaults:`. Those are decoded (and their problems
	// reported) once under `defaults.…`; a node that inherits them must not report them again.
	fromDefaults map[*yaml.Node]bool
	// links resolves the paths the file names, each directory on the way once per load.
	links realpath.Cache
}

func (d *decoder) add(line int, path, format string, args ...any) {
	d.errs = append(d.errs, Error{File: d.file, Line: line, Path: path, Msg: fmt.Sprintf(format, args...)})
}

// errAt reports a problem of the YAML node n.
func (d *decoder) errAt(n *yaml.Node, path, format string, args ...any) {
	if d.fromDefaults[n] {
		return
	}
	d.add(n.Line, path, format, args...)
}

// errPath reports a problem found across fields, at the line recorded for path (or for its
// nearest recorded parent).
func (d *decoder) errPath(path, format string, args ...any) {
	d.add(d.lineOf(path), path, format, args...)
}

func (d *decoder) lineOf(path string) int {
	for p := path; p != ""; {
		if l, ok := d.lines[p]; ok {
			return l
		}
		i := strings.LastIndexAny(p, ".[")
		if i < 0 {
			break
		}
		p = p[:i]
	}
	return 1
}

func (d *decoder) mark(path string, n *yaml.Node) { d.lines[path] = n.Line }

// reported says whether a problem of the field at path is reported already.
func (d *decoder) reported(path string) bool {
	return slices.ContainsFunc(d.errs, func(e Error) bool { return e.Path == path })
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func index(path string, i int) string { return path + "[" + strconv.Itoa(i) + "]" }

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// parserProblems are the problems yaml.v3's parser (not its scanner) reports. For those it
// prints the 0-based line where the broken construct starts, so 1 is added to give the
// construct's line in the file.
var parserProblems = map[string]bool{
	"did not find expected ',' or ']'":       true,
	"did not find expected ',' or '}'":       true,
	"did not find expected '-' indicator":    true,
	"did not find expected <document start>": true,
	"did not find expected <stream-start>":   true,
	"did not find expected key":              true,
	"did not find expected node content":     true,
	"found duplicate %TAG directive":         true,
	"found duplicate %YAML directive":        true,
	"found incompatible YAML document":       true,
	"found undefined tag handle":             true,
}

func (d *decoder) syntax(err error) {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	line := 0
	if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = m[2]
	}
	if parserProblems[msg] {
		line++
	}
	d.add(line, "", "invalid YAML: %s", msg)
}

func (d *decoder) group(data []byte) *Group {
	root := d.document(data)
	if root == nil {
		return nil
	}
	g := &Group{File: d.file, Dir: d.dir}
	m, ok := d.mapping(root, "", groupFields)
	if !ok {
		return nil
	}
	if v := m["group"]; v != nil {
		d.mark("group", v)
		if s, ok := d.str(v, "group"); ok {
			g.Name = s
			if !isLabel(s, false) {
				d.errAt(v, "group", "name %q is not a DNS label %s", s, labelRule)
			}
		}
	} else {
		d.add(root.Line, "group", "is required")
	}
	if v := m["namespace"]; v != nil {
		if s, ok := d.str(v, "namespace"); ok {
			g.Namespace = s
			if !isLabel(s, false) {
				d.errAt(v, "namespace", "%q is not a DNS label %s", s, labelRule)
			}
		}
	}
	if v := m["sharedNamespace"]; v != nil {
		g.SharedNamespace, _ = d.boolean(v, "sharedNamespace")
	}
	if v := m["runtimeClassName"]; v != nil {
		if s, ok := d.str(v, "runtimeClassName"); ok {
			g.RuntimeClassName = s
			g.RuntimeClassLine = v.Line
			if !isSubdomain(s) {
				d.errAt(v, "runtimeClassName", "%q is not a DNS subdomain (lowercase letters, digits, '-' and '.')", s)
			}
		}
	}
	var defaults *yaml.Node
	if v := m["defaults"]; v != nil {
		d.node(v, "defaults", "", true) // reports the defaults' own problems, once
		if v.Kind == yaml.MappingNode {
			defaults = v
			d.fromDefaults = make(map[*yaml.Node]bool)
			markTree(v, d.fromDefaults)
		}
	}
	nodes := m["nodes"]
	if nodes == nil {
		d.add(root.Line, "nodes", "is required")
		return g
	}
	for _, e := range d.entries(nodes, "nodes") {
		path := "nodes." + e.key
		d.mark(path, e.keyNode)
		if !isLabel(e.key, true) {
			d.errAt(e.keyNode, path, "name %q is not a DNS label %s", e.key, nodeLabelRule)
		}
		body := mergeDefaults(e.val, defaults, deepNodeKeys, e.keyNode.Line)
		g.Nodes = append(g.Nodes, d.node(body, path, e.key, false))
	}
	slices.SortFunc(g.Nodes, func(a, b *Node) int { return strings.Compare(a.Name, b.Name) })
	if v := m["publish"]; v != nil {
		g.Publish = d.publish(v)
	}
	if v := m["spire"]; v != nil {
		g.Spire = d.spire(v)
	}
	if v := m["central"]; v != nil {
		g.Central = d.central(v)
	}
	d.validate(g)
	d.validateCentral(g)
	d.validatePublish(g)
	d.validateNameOwners(g)
	return g
}

func markTree(n *yaml.Node, set map[*yaml.Node]bool) {
	set[n] = true
	for _, c := range n.Content {
		markTree(c, set)
	}
}

// mergeDefaults returns own with the keys of def it lacks (a null value counts as lacking),
// merging the keys of deep key by key. own is returned as it is when either is not a mapping:
// the decoder reports that.
func mergeDefaults(own, def *yaml.Node, deep deepKeys, line int) *yaml.Node {
	own = deref(own)
	if def == nil || def.Kind != yaml.MappingNode {
		return own
	}
	if own != nil && own.Kind != yaml.MappingNode && !isNull(own) {
		return own
	}
	out := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Line: line}
	idx := map[string]int{}
	if own != nil && own.Kind == yaml.MappingNode {
		out.Line, out.Column = own.Line, own.Column
		out.Content = append(make([]*yaml.Node, 0, len(own.Content)+len(def.Content)), own.Content...)
		for i := 0; i+1 < len(own.Content); i += 2 {
			if _, dup := idx[own.Content[i].Value]; !dup {
				idx[own.Content[i].Value] = i + 1
			}
		}
	}
	for i := 0; i+1 < len(def.Content); i += 2 {
		k, v := def.Content[i], deref(def.Content[i+1])
		j, ok := idx[k.Value]
		switch {
		case !ok:
			out.Content = append(out.Content, k, v)
			idx[k.Value] = len(out.Content) - 1
		case isNull(deref(out.Content[j])):
			out.Content[j] = v
		default:
			if sub, isDeep := deep[k.Value]; isDeep {
				ov := deref(out.Content[j])
				if ov.Kind == yaml.MappingNode && v.Kind == yaml.MappingNode {
					out.Content[j] = mergeDefaults(ov, v, sub, ov.Line)
				}
			}
		}
	}
	return out
}
