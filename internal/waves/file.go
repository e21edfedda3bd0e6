// Package waves is a waves file: groups (each a group file, optionally one target of it) that
// depend on groups, as Flux's dependsOn orders whole units. It loads the file strictly (a
// cycle, a missing group, a group listed twice are refused with file:line), orders it, runs a
// function over its groups in dependency order (or in reverse) as many at once as allowed,
// stopping the dependents of a group that failed, and judges a group's health from its
// status. It is pure: it drives the single-group engine only through the function it is given.
package waves

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"go.yaml.in/yaml/v3"

	"slipway.dev/slipway/internal/spec"
)

// TargetAll is the target of every node of a group (as spec.TargetAll).
const TargetAll = "all"

// File is a loaded waves file: its groups in the order written, dependencies checked.
type File struct {
	Path   string
	Groups []*Group
}

// Group is one entry of a waves file.
type Group struct {
	Name      string   // DNS label, unique in the file: what dependsOn names
	File      string   // the group file, absolute
	Target    string   // TargetAll or an app of the group file
	State     string   // the state URL for this group; "": the usual default
	DependsOn []string // names of groups applied and healthy before this one
	Line      int      // the line of the entry in the waves file
	depLines  []int    // the line of each DependsOn entry
	fileLine  int      // the line of file:
	targetLn  int      // the line of target:, or the entry's
}

// Is reports whether data looks like a waves file rather than a group file: a top-level
// `groups:` and no `group:`. A group file with `groups:` would be refused anyway (an unknown
// field), so the two never meet.
func Is(data []byte) bool {
	var doc yaml.Node
	if yaml.Unmarshal(data, &doc) != nil || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return false
	}
	keys := map[string]bool{}
	m := doc.Content[0]
	for i := 0; i+1 < len(m.Content); i += 2 {
		keys[m.Content[i].Value] = true
	}
	return keys["groups"] && !keys["group"]
}

// IsFile reports whether the file at path is a waves file; an unreadable file is not one
// (the group file loader says why it cannot read it).
func IsFile(path string) bool {
	data, err := os.ReadFile(path)
	return err == nil && Is(data)
}

// Load reads and checks the waves file at path.
func Load(path string) (*File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("waves file %s: %w", path, err)
	}
	return Parse(path, data)
}

// Parse checks a waves file's content; paths are relative to the directory of name. Every
// problem is reported, one line each, `file:line: path: cause`: the error is then a
// spec.Errors (the one form of a file's problems, as validate prints them).
func Parse(name string, data []byte) (*File, error) {
	dir, err := filepath.Abs(filepath.Dir(name))
	if err != nil {
		return nil, fmt.Errorf("waves file %s: %w", name, err)
	}
	l := &loader{name: name, dir: dir}
	f := &File{Path: name}
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("waves file %s: %w", name, err)
	}
	f.Groups = l.file(&doc)
	if len(l.errs) == 0 {
		l.checkGraph(f)
	}
	if len(l.errs) > 0 {
		return nil, l.err()
	}
	return f, nil
}

type loader struct {
	name string
	dir  string
	errs spec.Errors
}

func (l *loader) add(line int, path, format string, args ...any) {
	l.errs = append(l.errs, spec.Error{File: l.name, Line: line, Path: path, Msg: fmt.Sprintf(format, args...)})
}

// err is every problem found, as spec.Errors (one `file:line: path: cause` a line), in the
// order of their lines.
func (l *loader) err() error {
	slices.SortStableFunc(l.errs, func(a, b spec.Error) int { return a.Line - b.Line })
	return l.errs
}

// Names are the names of the file's groups, in the order written.
func (f *File) Names() []string {
	out := make([]string, len(f.Groups))
	for i, g := range f.Groups {
		out[i] = g.Name
	}
	return out
}

// Group returns the group called name, or nil.
func (f *File) Group(name string) *Group {
	for _, g := range f.Groups {
		if g.Name == name {
			return g
		}
	}
	return nil
}
