package spec

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
)

// Error is one problem of a group file, at a line and a field path.
type Error struct {
	File string
	Line int    // 1-based; 0 when the problem has no line (an unreadable file)
	Path string // field path, e.g. nodes.web.firewall.published[1]; "" for the whole file
	Msg  string
}

// Error prints `FILE:LINE: FIELD.PATH: what is wrong`.
func (e Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		b.WriteByte(':')
		b.WriteString(strconv.Itoa(e.Line))
	}
	b.WriteString(": ")
	if e.Path != "" {
		b.WriteString(e.Path)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Errors are all the problems of one file, in the order of their lines.
type Errors []Error

// Error prints one problem per line.
func (es Errors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// sorted orders errs by line, then path, then message, without duplicates, so a file gives
// the same report every time.
func (es Errors) sorted() Errors {
	slices.SortStableFunc(es, func(a, b Error) int {
		return cmp.Or(cmp.Compare(a.Line, b.Line), cmp.Compare(a.Path, b.Path), cmp.Compare(a.Msg, b.Msg))
	})
	return slices.Compact(es)
}
