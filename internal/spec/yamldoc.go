package spec

import (
	"bytes"
	"errors"
	"io"

	"go.yaml.in/yaml/v3"
)

// document returns the root of the file's one YAML document, with its merge keys resolved, or
// nil after reporting why there is none. Empty documents (a trailing `---`, a document of
// comments) are skipped, as kubectl does: only a second document with content is an error.
func (d *decoder) document(data []byte) *yaml.Node {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var root *yaml.Node
	for {
		var doc yaml.Node
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			d.syntax(err)
			if root == nil {
				return nil
			}
			break
		}
		if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 || isNull(doc.Content[0]) {
			continue
		}
		if root != nil {
			d.add(doc.Line, "", "the file has more than one YAML document")
			break
		}
		root = doc.Content[0]
	}
	if root == nil {
		d.add(0, "", "the file is empty")
		return nil
	}
	m := &merger{d: d, state: map[*yaml.Node]mergeState{}}
	m.resolve(root, "")
	return deref(root)
}

type mergeState int

const (
	resolving mergeState = iota + 1
	resolved
)

// maxMergedPairs bounds the pairs merge keys may add to a file, so a file of merges of
// merges cannot make the loader build a tree far larger than itself.
const maxMergedPairs = 100_000

// merger expands YAML merge keys (`<<: *anchor`, `<<: [*a, *b]`) in place, in every mapping:
// a mapping's own keys win over merged ones, and an earlier source over a later one (YAML 1.1
// merge key type). Mappings are changed in place so that every alias of one sees it merged.
type merger struct {
	d      *decoder
	state  map[*yaml.Node]mergeState
	merged int
}

func (m *merger) resolve(n *yaml.Node, path string) {
	if n == nil || n.Kind == yaml.AliasNode || m.state[n] != 0 {
		return // an alias is resolved where its anchor is written, before any use of it
	}
	m.state[n] = resolving
	defer func() { m.state[n] = resolved }()
	switch n.Kind {
	case yaml.SequenceNode:
		for i, c := range n.Content {
			m.resolve(c, index(path, i))
		}
		return
	case yaml.MappingNode:
	default:
		return
	}
	var own, sources []*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge" {
			sources = append(sources, m.sources(k, v, path)...)
			continue
		}
		if k.Kind == yaml.ScalarNode {
			m.resolve(v, join(path, k.Value))
		}
		own = append(own, k, v)
	}
	if sources == nil && len(own) == len(n.Content) {
		return
	}
	have := make(map[string]bool, len(own)/2)
	for i := 0; i < len(own); i += 2 {
		have[own[i].Value] = true
	}
	for _, src := range sources {
		for i := 0; i+1 < len(src.Content); i += 2 {
			k := src.Content[i]
			if have[k.Value] {
				continue
			}
			if m.merged++; m.merged > maxMergedPairs {
				m.d.errAt(n, path, "merge keys add more than %d keys to the file", maxMergedPairs)
				n.Content = own
				return
			}
			have[k.Value] = true
			own = append(own, k, src.Content[i+1])
		}
	}
	n.Content = own
}

// sources returns the mappings a merge key k with value v merges, resolved, in order.
func (m *merger) sources(k, v *yaml.Node, path string) []*yaml.Node {
	p := join(path, "<<")
	items := []*yaml.Node{v}
	if dv := deref(v); dv != nil && dv.Kind == yaml.SequenceNode {
		items = dv.Content
	}
	var out []*yaml.Node
	for _, it := range items {
		src := deref(it)
		if src == nil {
			continue
		}
		if src.Kind != yaml.MappingNode {
			m.d.errAt(k, p, "a merge key takes a mapping or a list of mappings, not %s", what(src))
			continue
		}
		m.resolve(src, p)
		if m.state[src] == resolving {
			m.d.errAt(k, p, "merges a mapping that contains it")
			continue
		}
		out = append(out, src)
	}
	return out
}
