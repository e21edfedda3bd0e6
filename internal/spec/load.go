package spec

import (
	"errors"
	"fmt"
	"math"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/google/go-containerregistry/pkg/name"
	"go.yaml.in/yaml/v3"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
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
	d := &decoder{file: name, dir: dir, lines: make(map[string]int)}
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
	// fromDefaults holds every YAML node of `defaults:`. Those are decoded (and their problems
	// reported) once under `defaults.…`; a node that inherits them must not report them again.
	fromDefaults map[*yaml.Node]bool
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
	d.validate(g)
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

func deref(n *yaml.Node) *yaml.Node {
	// Bounded: an alias of an alias chain is at most as long as the file.
	for i := 0; n != nil && n.Kind == yaml.AliasNode && n.Alias != nil && i < 1000; i++ {
		n = n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool {
	return n == nil || (n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null")
}

// what names the kind of a YAML value for "must be X, not Y".
func what(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!str":
			return "a string"
		case "!!int":
			return "an integer"
		case "!!bool":
			return "a boolean"
		case "!!float":
			return "a number"
		case "!!null":
			return "empty"
		case "!!timestamp":
			return "a timestamp"
		}
	}
	if t := n.ShortTag(); strings.HasPrefix(t, "!!") && isLabel(t[2:], true) {
		return "a " + t[2:]
	}
	// A custom tag is the file's text: quoted, so an odd one cannot break the message.
	return fmt.Sprintf("a value tagged %q", n.ShortTag())
}

// mapping checks that n is a mapping of known fields, each once, and returns the values by
// field; null values count as absent.
func (d *decoder) mapping(n *yaml.Node, path string, known *section) (map[string]*yaml.Node, bool) {
	n = deref(n)
	if isNull(n) {
		return map[string]*yaml.Node{}, true
	}
	if n.Kind != yaml.MappingNode {
		d.errAt(n, path, "must be a mapping, not %s", what(n))
		return nil, false
	}
	m := make(map[string]*yaml.Node, len(n.Content)/2)
	seen := make(map[string]int, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := deref(n.Content[i]), deref(n.Content[i+1])
		if k.Kind != yaml.ScalarNode {
			d.errAt(k, path, "a key must be a string, not %s", what(k))
			continue
		}
		p := join(path, k.Value)
		if first, dup := seen[k.Value]; dup {
			d.errAt(k, p, "duplicate key (first at line %d)", first)
			continue
		}
		seen[k.Value] = k.Line
		if !known.has(k.Value) {
			d.errAt(k, p, "unknown field %q", k.Value)
			continue
		}
		if !isNull(v) {
			m[k.Value] = v
		}
	}
	return m, true
}

type entry struct {
	key     string
	keyNode *yaml.Node
	val     *yaml.Node
}

// entries checks that n is a mapping of string keys, each once, and returns its pairs in
// file order (null values included: the caller says what they mean).
func (d *decoder) entries(n *yaml.Node, path string) []entry {
	n = deref(n)
	if isNull(n) {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		d.errAt(n, path, "must be a mapping, not %s", what(n))
		return nil
	}
	out := make([]entry, 0, len(n.Content)/2)
	seen := make(map[string]int, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := deref(n.Content[i]), deref(n.Content[i+1])
		if k.Kind != yaml.ScalarNode {
			d.errAt(k, path, "a key must be a string, not %s", what(k))
			continue
		}
		if first, dup := seen[k.Value]; dup {
			d.errAt(k, join(path, k.Value), "duplicate key (first at line %d)", first)
			continue
		}
		seen[k.Value] = k.Line
		out = append(out, entry{key: k.Value, keyNode: k, val: v})
	}
	return out
}

func (d *decoder) seq(n *yaml.Node, path string) ([]*yaml.Node, bool) {
	n = deref(n)
	if n.Kind != yaml.SequenceNode {
		d.errAt(n, path, "must be a list, not %s", what(n))
		return nil, false
	}
	return n.Content, true
}

func (d *decoder) str(n *yaml.Node, path string) (string, bool) {
	n = deref(n)
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!str" {
		d.errAt(n, path, "must be a string, not %s", what(n))
		return "", false
	}
	return n.Value, true
}

// text is a scalar as written, for values that are strings in the end (environment values):
// `PORT: 8080` means "8080".
func (d *decoder) text(n *yaml.Node, path string) (string, bool) {
	n = deref(n)
	if n.Kind != yaml.ScalarNode || isNull(n) {
		d.errAt(n, path, "must be a string, not %s", what(n))
		return "", false
	}
	return n.Value, true
}

func (d *decoder) strList(n *yaml.Node, path string) ([]string, bool) {
	items, ok := d.seq(n, path)
	if !ok {
		return nil, false
	}
	out := make([]string, 0, len(items))
	for i, it := range items {
		s, ok2 := d.str(it, index(path, i))
		if ok2 {
			out = append(out, s)
		}
		ok = ok && ok2
	}
	return out, ok
}

func (d *decoder) int(n *yaml.Node, path string) (int64, bool) {
	n = deref(n)
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" {
		d.errAt(n, path, "must be an integer, not %s", what(n))
		return 0, false
	}
	v, err := strconv.ParseInt(n.Value, 10, 64)
	if err != nil {
		if err2 := n.Decode(&v); err2 != nil {
			d.errAt(n, path, "integer %s is out of range", n.Value)
			return 0, false
		}
	}
	return v, true
}

func (d *decoder) portNumber(n *yaml.Node, path string) (int32, bool) {
	v, ok := d.int(n, path)
	if !ok {
		return 0, false
	}
	if v < 1 || v > 65535 {
		d.errAt(n, path, "port %d is out of range (1-65535)", v)
		return 0, false
	}
	return int32(v), true
}

// port reads `80`, `tcp/80` or `udp/53`.
func (d *decoder) port(n *yaml.Node, path string) (Port, bool) {
	n = deref(n)
	d.mark(path, n)
	tag := n.ShortTag()
	if n.Kind != yaml.ScalarNode || (tag != "!!int" && tag != "!!str") {
		d.errAt(n, path, "must be a port (80, tcp/80 or udp/53), not %s", what(n))
		return Port{}, false
	}
	p := Port{Protocol: TCP}
	s := n.Value
	if tag == "!!str" {
		if i := strings.IndexByte(s, '/'); i >= 0 {
			switch strings.ToLower(s[:i]) {
			case "tcp":
			case "udp":
				p.Protocol = UDP
			default:
				d.errAt(n, path, "protocol %q is not tcp or udp", s[:i])
				return Port{}, false
			}
			s = s[i+1:]
		}
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		if errors.Is(err, strconv.ErrRange) {
			d.errAt(n, path, "port %s is out of range (1-65535)", s)
		} else {
			d.errAt(n, path, "%q is not a port (80, tcp/80 or udp/53)", n.Value)
		}
		return Port{}, false
	}
	if v < 1 || v > 65535 {
		d.errAt(n, path, "port %d is out of range (1-65535)", v)
		return Port{}, false
	}
	p.Number = int32(v)
	return p, true
}

func (d *decoder) portList(n *yaml.Node, path string) []Port {
	items, ok := d.seq(n, path)
	if !ok {
		return nil
	}
	d.mark(path, n)
	out := make([]Port, 0, len(items))
	for i, it := range items {
		p, ok := d.port(it, index(path, i))
		if !ok {
			continue
		}
		if slices.Contains(out, p) {
			d.errAt(deref(it), index(path, i), "port %s is repeated", p)
			continue
		}
		out = append(out, p)
	}
	return out
}

func (d *decoder) cidrList(n *yaml.Node, path string) []string {
	items, ok := d.seq(n, path)
	if !ok {
		return nil
	}
	out := make([]string, 0, len(items))
	for i, it := range items {
		p := index(path, i)
		c, ok := d.cidr(it, p)
		switch {
		case !ok:
		case slices.Contains(out, c):
			d.errAt(deref(it), p, "CIDR %s is repeated", deref(it).Value)
		default:
			out = append(out, c)
		}
	}
	return out
}

// cidr reads one CIDR and returns it canonical.
func (d *decoder) cidr(n *yaml.Node, path string) (string, bool) {
	s, ok := d.str(n, path)
	if !ok {
		return "", false
	}
	pfx, err := netip.ParsePrefix(s)
	switch {
	case err != nil:
		d.errAt(deref(n), path, "%q is not a CIDR (e.g. 10.0.0.0/8, 2001:db8::/32)", s)
	case pfx.Masked() != pfx:
		d.errAt(deref(n), path, "CIDR %s has bits set after the prefix (did you mean %s?)", s, pfx.Masked())
	default:
		return pfx.String(), true
	}
	return "", false
}

func (d *decoder) duration(n *yaml.Node, path string) (time.Duration, bool) {
	s, ok := d.str(n, path)
	if !ok {
		return 0, false
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		d.errAt(deref(n), path, "%q is not a duration (e.g. 90s, 5m, 1h30m)", s)
		return 0, false
	}
	if v <= 0 {
		d.errAt(deref(n), path, "duration %s must be more than 0", s)
		return 0, false
	}
	return v, true
}

func (d *decoder) quantity(n *yaml.Node, path string) (resource.Quantity, bool) {
	n = deref(n)
	if n.Kind != yaml.ScalarNode || (n.ShortTag() != "!!str" && n.ShortTag() != "!!int" && n.ShortTag() != "!!float") {
		d.errAt(n, path, "must be a quantity (e.g. 500m, 1Gi), not %s", what(n))
		return resource.Quantity{}, false
	}
	q, err := resource.ParseQuantity(n.Value)
	if err != nil {
		d.errAt(n, path, "%q is not a quantity (e.g. 500m, 1Gi)", n.Value)
		return resource.Quantity{}, false
	}
	if q.Sign() < 0 {
		d.errAt(n, path, "quantity %s is negative", n.Value)
		return resource.Quantity{}, false
	}
	return q, true
}

// shown is a path of the file as a message shows it: as written, or quoted when it holds a
// character that would break the one-line message.
func shown(p string) string {
	if strings.ContainsFunc(p, func(r rune) bool { return !unicode.IsPrint(r) }) {
		return strconv.Quote(p)
	}
	return p
}

// file resolves a path of the file against its directory.
func (d *decoder) resolve(p string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(d.dir, p)
}

func (d *decoder) node(n *yaml.Node, path, nodeName string, isDefaults bool) *Node {
	nd := &Node{
		Name:           nodeName,
		Init:           InitSystemd,
		RolloutTimeout: DefaultRolloutTimeout,
		State:          StateVolume{Size: resource.MustParse(DefaultStateSize)},
		Workload:       Workload{Placement: Placement{Spread: true}},
	}
	roleSets := map[*Role]workloadSet{}
	m, ok := d.mapping(n, path, nodeFields)
	if !ok {
		return nd
	}
	if v := m["image"]; v != nil {
		nd.Image = d.image(v, path+".image", true)
	} else if !isDefaults {
		d.add(d.lineOf(path), path, "image is required (one of rootfs, archive or base)")
	}
	if v := m["init"]; v != nil {
		if s, ok := d.str(v, path+".init"); ok {
			if s != InitSystemd && s != InitNone {
				d.errAt(deref(v), path+".init", "%q is not systemd or none", s)
			} else {
				nd.Init = s
			}
		}
	}
	if v := m["readiness"]; v != nil {
		nd.Readiness = d.probe(v, path+".readiness")
	}
	if v := m["env"]; v != nil {
		nd.Env = d.env(v, path+".env", &nd.EnvRefs)
	}
	if v := m["files"]; v != nil {
		nd.Files = d.files(v, path+".files")
	}
	if v := m["config"]; v != nil {
		nd.Config = d.configs(v, path+".config")
	}
	if v := m["secrets"]; v != nil {
		// defaults' secrets are read for each node that takes them, not for defaults itself.
		nd.Secrets = d.secrets(v, path+".secrets", nodeName)
	}
	if v := m["resources"]; v != nil {
		nd.Resources = d.resources(v, path+".resources")
	}
	if v := m["rolloutTimeout"]; v != nil {
		if t, ok := d.duration(v, path+".rolloutTimeout"); ok {
			nd.RolloutTimeout = t
		}
	}
	if v := m["state"]; v != nil {
		sm, ok := d.mapping(v, path+".state", stateFields)
		if ok {
			if sv := sm["size"]; sv != nil {
				if q, ok := d.quantity(sv, path+".state.size"); ok {
					if q.Sign() == 0 {
						d.errAt(deref(sv), path+".state.size", "size must be more than 0")
					} else {
						nd.State.Size = q
					}
				}
			}
			if sv := sm["storageClass"]; sv != nil {
				if s, ok := d.str(sv, path+".state.storageClass"); ok {
					if !isSubdomain(s) {
						d.errAt(deref(sv), path+".state.storageClass", "%q is not a DNS subdomain (lowercase letters, digits, '-' and '.')", s)
					}
					nd.State.StorageClass = s
				}
			}
			if sv := sm["protect"]; sv != nil {
				if b, ok := d.boolean(sv, path+".state.protect"); ok {
					nd.State.Protect = b
				}
			}
		}
	}
	if v := m["firewall"]; v != nil {
		nd.Firewall = d.firewall(v, path+".firewall")
	}
	if v := m["publishedNames"]; v != nil {
		p := path + ".publishedNames"
		names, _ := d.strList(v, p)
		items := deref(v).Content
		for i, s := range names {
			switch {
			case !isDNSName(s):
				d.errAt(deref(items[i]), index(p, i), "%q is not a DNS name", s)
			case slices.Contains(nd.PublishedNames, s):
				d.errAt(deref(items[i]), index(p, i), "name %s is repeated", s)
			default:
				nd.PublishedNames = append(nd.PublishedNames, s)
			}
		}
	}
	if v := m["roles"]; v != nil {
		for _, e := range d.entries(v, path+".roles") {
			rp := path + ".roles." + e.key
			d.mark(rp, e.keyNode)
			if !isLabel(e.key, false) {
				d.errAt(e.keyNode, rp, "name %q is not a DNS label %s", e.key, labelRule)
			}
			r, set := d.role(e.val, rp, e.key)
			roleSets[r] = set
			nd.Roles = append(nd.Roles, r)
		}
		slices.SortFunc(nd.Roles, func(a, b *Role) int { return strings.Compare(a.Name, b.Name) })
	}
	d.workload(m, path, &nd.Workload)
	d.nodeStop(m, path, nd)
	for _, r := range nd.Roles {
		inherit(r, roleSets[r], nd)
	}
	if nd.Image.Rootfs != "" && len(nd.Image.Command) == 0 {
		nd.Image.Command = []string{DefaultInitCommand}
	}
	return nd
}

func (d *decoder) image(n *yaml.Node, path string, required bool) Image {
	var img Image
	d.mark(path, deref(n))
	m, ok := d.mapping(n, path, imageFields)
	if !ok {
		return img
	}
	var sources []string
	for _, k := range []string{"rootfs", "archive", "base"} {
		if m[k] != nil {
			sources = append(sources, k)
		}
	}
	switch {
	case len(sources) == 0 && required:
		d.errAt(deref(n), path, "needs one of rootfs, archive or base")
	case len(sources) > 1:
		d.errAt(deref(n), path, "has %s; set exactly one of rootfs, archive or base", strings.Join(sources, " and "))
	}
	if v := m["rootfs"]; v != nil {
		if s, ok := d.str(v, path+".rootfs"); ok {
			img.Rootfs = d.resolve(s)
			if fi, err := os.Stat(img.Rootfs); err != nil {
				d.errAt(deref(v), path+".rootfs", "directory %s does not exist", shown(s))
			} else if !fi.IsDir() {
				d.errAt(deref(v), path+".rootfs", "%s is not a directory", shown(s))
			}
		}
	}
	if v := m["archive"]; v != nil {
		if s, ok := d.str(v, path+".archive"); ok {
			img.Archive = d.resolve(s)
			if fi, err := os.Stat(img.Archive); err != nil {
				d.errAt(deref(v), path+".archive", "file %s does not exist", shown(s))
			} else if fi.IsDir() {
				d.errAt(deref(v), path+".archive", "%s is a directory, not a tarball", shown(s))
			}
		}
	}
	if v := m["base"]; v != nil {
		if s, ok := d.str(v, path+".base"); ok {
			if _, err := name.ParseReference(s); err != nil {
				d.errAt(deref(v), path+".base", "%q is not an image reference", s)
			}
			img.Base = s
		}
	}
	if v := m["add"]; v != nil {
		p := path + ".add"
		if items, ok := d.seq(v, p); ok {
			for i, it := range items {
				ip := index(p, i)
				am, ok := d.mapping(it, ip, addFields)
				if !ok {
					continue
				}
				img.Add = append(img.Add, d.addFile(it, am, ip))
			}
		}
		if m["base"] == nil {
			d.errAt(deref(v), p, "needs base: add puts files on top of a base image")
		}
	}
	if v := m["command"]; v != nil {
		p := path + ".command"
		if cmd, ok := d.strList(v, p); ok {
			if len(cmd) == 0 {
				d.errAt(deref(v), p, "must not be empty (leave it out for the image's own)")
			}
			img.Command = cmd
		}
	}
	return img
}

func (d *decoder) probe(n *yaml.Node, path string) *Probe {
	pr, _ := d.probeOf(n, path, probeFields)
	return pr
}

// probeOf reads a check, exactly one of exec, http and tcp, from a mapping of the fields
// known, and returns the mapping for the caller's other fields.
func (d *decoder) probeOf(n *yaml.Node, path string, known *section) (*Probe, map[string]*yaml.Node) {
	m, ok := d.mapping(n, path, known)
	if !ok {
		return nil, nil
	}
	var kinds []string
	for _, k := range probeFields.names() {
		if m[k] != nil {
			kinds = append(kinds, k)
		}
	}
	if len(kinds) != 1 {
		if len(kinds) == 0 {
			d.errAt(deref(n), path, "needs one of exec, http or tcp")
		} else {
			d.errAt(deref(n), path, "has %s; set exactly one of exec, http or tcp", strings.Join(kinds, " and "))
		}
		return nil, nil
	}
	pr := &Probe{}
	switch kinds[0] {
	case "exec":
		cmd, ok := d.strList(m["exec"], path+".exec")
		if !ok {
			return nil, nil
		}
		if len(cmd) == 0 {
			d.errAt(deref(m["exec"]), path+".exec", "must not be empty")
			return nil, nil
		}
		pr.Exec = cmd
	case "http":
		hm, ok := d.mapping(m["http"], path+".http", httpFields)
		if !ok {
			return nil, nil
		}
		h := &HTTPProbe{Path: "/"}
		if v := hm["port"]; v != nil {
			if p, ok := d.portNumber(v, path+".http.port"); ok {
				h.Port = p
			}
		} else {
			d.errAt(deref(m["http"]), path+".http.port", "is required")
		}
		if v := hm["path"]; v != nil {
			if s, ok := d.str(v, path+".http.path"); ok {
				if !strings.HasPrefix(s, "/") {
					d.errAt(deref(v), path+".http.path", "%q does not start with /", s)
				}
				h.Path = s
			}
		}
		pr.HTTP = h
	case "tcp":
		p, ok := d.portNumber(m["tcp"], path+".tcp")
		if !ok {
			return nil, nil
		}
		pr.TCP = p
	}
	return pr, m
}

// Environment names slipway sets itself (SPEC §5); a file may not set them.
var reservedEnv = []string{"container_uuid", "SLIPWAY_NODE", "SLIPWAY_ROLE"}

var envName = regexp.MustCompile(`^[-._a-zA-Z][-._a-zA-Z0-9]*$`)

// env reads literal variables; with refs set, a value may also be a reference to a key of a
// Secret or ConfigMap (SPEC §3a), put in *refs.
func (d *decoder) env(n *yaml.Node, path string, refs *map[string]EnvRef) map[string]string {
	entries := d.entries(n, path)
	out := make(map[string]string, len(entries))
	for _, e := range entries {
		p := join(path, e.key)
		switch {
		case !envName.MatchString(e.key):
			d.errAt(e.keyNode, p, "%q is not an environment variable name (letters, digits, '_', '-' and '.', not starting with a digit)", e.key)
			continue
		case slices.Contains(reservedEnv, e.key):
			d.errAt(e.keyNode, p, "%s is set by slipway", e.key)
			continue
		}
		if refs != nil && deref(e.val) != nil && deref(e.val).Kind == yaml.MappingNode {
			if r, ok := d.envRef(e.val, p); ok {
				if *refs == nil {
					*refs = map[string]EnvRef{}
				}
				(*refs)[e.key] = r
			}
			continue
		}
		if v, ok := d.text(e.val, p); ok {
			out[e.key] = v
		}
	}
	return out
}

var hugepages = regexp.MustCompile(`^hugepages-[0-9]+[KMGT]i?$`)

func (d *decoder) resources(n *yaml.Node, path string) corev1.ResourceRequirements {
	var rr corev1.ResourceRequirements
	m, ok := d.mapping(n, path, resourceFields)
	if !ok {
		return rr
	}
	list := func(v *yaml.Node, p string) corev1.ResourceList {
		entries := d.entries(v, p)
		out := make(corev1.ResourceList, len(entries))
		for _, e := range entries {
			ep := join(p, e.key)
			d.mark(ep, e.keyNode)
			switch e.key {
			case "cpu", "memory", "ephemeral-storage":
			default:
				if !hugepages.MatchString(e.key) && !strings.Contains(e.key, "/") {
					d.errAt(e.keyNode, ep, "unknown resource %q (cpu, memory, ephemeral-storage, hugepages-<size> or a domain-qualified name)", e.key)
					continue
				}
			}
			if q, ok := d.quantity(e.val, ep); ok {
				out[corev1.ResourceName(e.key)] = q
			}
		}
		return out
	}
	if v := m["requests"]; v != nil {
		rr.Requests = list(v, path+".requests")
	}
	if v := m["limits"]; v != nil {
		rr.Limits = list(v, path+".limits")
	}
	return rr
}

func (d *decoder) firewall(n *yaml.Node, path string) Firewall {
	var f Firewall
	m, ok := d.mapping(n, path, firewallFields)
	if !ok {
		return f
	}
	ports := map[string]*[]Port{"served": &f.Served, "published": &f.Published, "admin": &f.Admin, "operator": &f.Operator}
	for k, dst := range ports {
		if v := m[k]; v != nil {
			*dst = d.portList(v, path+"."+k)
		}
	}
	cidrs := map[string]*[]string{"internalSources": &f.InternalSources, "adminSources": &f.AdminSources, "operatorSources": &f.OperatorSources}
	for k, dst := range cidrs {
		if v := m[k]; v != nil {
			*dst = d.cidrList(v, path+"."+k)
		}
	}
	if v := m["fromNamespaces"]; v != nil {
		f.FromNamespaces = d.peers(v, path+".fromNamespaces", fromNamespaceFields)
	}
	if v := m["egress"]; v != nil {
		f.Egress = d.peers(v, path+".egress", egressFields)
	}
	return f
}

func (d *decoder) role(n *yaml.Node, path, roleName string) (*Role, workloadSet) {
	r := &Role{Name: roleName, Replicas: DefaultRoleReplicas, Workload: Workload{Placement: Placement{Spread: true}}}
	m, ok := d.mapping(n, path, roleFields)
	if !ok {
		return r, workloadSet{}
	}
	if v := m["replicas"]; v != nil {
		if x, ok := d.int(v, path+".replicas"); ok {
			switch {
			case x < 0:
				d.errAt(deref(v), path+".replicas", "replicas %d is negative", x)
			case x > math.MaxInt32:
				d.errAt(deref(v), path+".replicas", "replicas %d is too many", x)
			default:
				r.Replicas = int32(x)
			}
		}
	}
	if v := m["ports"]; v != nil {
		r.Ports = d.portList(v, path+".ports")
	}
	if v := m["metrics"]; v != nil {
		if p, ok := d.port(v, path+".metrics"); ok {
			r.Metrics = &p
		}
	}
	if v := m["service"]; v != nil {
		sp := path + ".service"
		sm, ok := d.mapping(v, sp, serviceFields)
		if ok {
			s := &Service{}
			if iv := sm["image"]; iv != nil {
				s.Image = d.image(iv, sp+".image", true)
			} else {
				d.errAt(deref(v), sp+".image", "is required")
			}
			if ev := sm["environment"]; ev != nil {
				s.Environment = d.env(ev, sp+".environment", nil)
			}
			r.Service = s
		}
	}
	return r, d.workload(m, path, &r.Workload)
}

// labelRule and nodeLabelRule explain a refused name. A node name starts with a letter because
// it names a Service, and Service names are RFC 1035 labels.
const (
	labelRule     = "(lowercase letters, digits and '-', starting and ending with a letter or digit, at most 63 characters)"
	nodeLabelRule = "(lowercase letters, digits and '-', starting with a letter and ending with a letter or digit, at most 63 characters)"
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
