package spec

import (
	"errors"
	"fmt"
	"net/netip"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/api/resource"
)

// YAML nodes and the scalar readers of the decoder: each records an error at the node's
// line and says whether the value is usable.

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
	es := d.entries(n, path)
	m := make(map[string]*yaml.Node, len(es))
	for _, e := range es {
		if known.ignores(e.key) {
			continue
		}
		if !known.has(e.key) {
			d.errAt(e.keyNode, join(path, e.key), "unknown field %q", e.key)
			d.misspelt[path] = true
			continue
		}
		if !isNull(e.val) {
			m[e.key] = e.val
		}
	}
	return m, true
}

// lacks reports that the mapping at path (the YAML node n) lacks what format says, at
// join(path, field), unless the mapping has a key its section does not know: that key is
// reported as unknown already and is most likely the missing one misspelt, so that one mistake
// gives one message.
func (d *decoder) lacks(n *yaml.Node, path, field, format string, args ...any) {
	if d.misspelt[path] {
		return
	}
	if field != "" {
		path = join(path, field)
	}
	d.errAt(n, path, format, args...)
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

// field decodes the field key of mapping m with decode into *dst, where the file sets it; an
// absent field leaves *dst (its default).
func field[T any](m map[string]*yaml.Node, path, key string, dst *T, decode func(*yaml.Node, string) T) {
	if v := m[key]; v != nil {
		*dst = decode(v, path+"."+key)
	}
}

// fieldOK is field for a decoder that reports a bad value (recorded as an error): that too
// leaves *dst.
func fieldOK[T any](m map[string]*yaml.Node, path, key string, dst *T, decode func(*yaml.Node, string) (T, bool)) {
	if v := m[key]; v != nil {
		if x, ok := decode(v, path+"."+key); ok {
			*dst = x
		}
	}
}
