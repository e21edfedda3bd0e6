package devcluster

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// applyPatch applies a unified diff (diff -ru output) to the tree at dir, stripping the first
// component of each path as `patch -p1` does. It is strict where patch is lenient: every hunk
// must match the file at exactly the line its header names, with no fuzz and no offset, so a
// patch meant for one version of a module never lands on another. It runs in Go so the build
// needs no patch program.
func applyPatch(dir string, diff []byte) error {
	files, err := parsePatch(string(diff))
	if err != nil {
		return err
	}
	for _, f := range files {
		path := filepath.Join(dir, filepath.FromSlash(f.path))
		b, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("patch %s: %w", f.path, err)
		}
		out, err := f.apply(string(b))
		if err != nil {
			return fmt.Errorf("patch %s: %w", f.path, err)
		}
		if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
			return fmt.Errorf("patch %s: %w", f.path, err)
		}
	}
	return nil
}

// patchFile is one file's hunks.
type patchFile struct {
	path  string
	hunks []hunk
}

// hunk replaces the lines old, starting at line start (1-based), with new.
type hunk struct {
	start    int
	old, new []string
}

// parsePatch reads the files and hunks of a unified diff.
func parsePatch(diff string) ([]patchFile, error) {
	var files []patchFile
	lines := strings.Split(diff, "\n")
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		switch {
		case strings.HasPrefix(l, "+++ "):
			name, _, _ := strings.Cut(strings.TrimPrefix(l, "+++ "), "\t")
			_, rest, ok := strings.Cut(name, "/")
			if !ok || rest == "" {
				return nil, fmt.Errorf("patch: line %d: path %q has no directory to strip", i+1, name)
			}
			files = append(files, patchFile{path: rest})
		case strings.HasPrefix(l, "@@ "):
			if len(files) == 0 {
				return nil, fmt.Errorf("patch: line %d: hunk before any file", i+1)
			}
			h, n, err := parseHunk(lines, i)
			if err != nil {
				return nil, err
			}
			f := &files[len(files)-1]
			f.hunks = append(f.hunks, h)
			i = n - 1
		}
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("patch: no files in it")
	}
	return files, nil
}

// parseHunk reads the hunk whose header is lines[at] and returns it and the index of the line
// after it.
func parseHunk(lines []string, at int) (hunk, int, error) {
	var oldStart, oldLen, newLen int
	f := strings.Fields(lines[at])
	if len(f) < 4 || f[3] != "@@" {
		return hunk{}, 0, fmt.Errorf("patch: line %d: bad hunk header %q", at+1, lines[at])
	}
	var err error
	if oldStart, oldLen, err = hunkRange(f[1], "-"); err == nil {
		_, newLen, err = hunkRange(f[2], "+")
	}
	if err != nil {
		return hunk{}, 0, fmt.Errorf("patch: line %d: %w", at+1, err)
	}
	h := hunk{start: oldStart}
	i := at + 1
	for ; i < len(lines) && (len(h.old) < oldLen || len(h.new) < newLen); i++ {
		l := lines[i]
		if l == "" { // a blank context line some tools write without its space
			l = " "
		}
		switch l[0] {
		case ' ':
			h.old, h.new = append(h.old, l[1:]), append(h.new, l[1:])
		case '-':
			h.old = append(h.old, l[1:])
		case '+':
			h.new = append(h.new, l[1:])
		case '\\': // "\ No newline at end of file": none of ours
		default:
			return hunk{}, 0, fmt.Errorf("patch: line %d: unexpected %q in a hunk", i+1, l)
		}
	}
	if len(h.old) != oldLen || len(h.new) != newLen {
		return hunk{}, 0, fmt.Errorf("patch: line %d: hunk ends early", at+1)
	}
	return h, i, nil
}

// hunkRange parses "-12,7" (or "-12", one line) after its sign.
func hunkRange(s, sign string) (start, n int, err error) {
	s, ok := strings.CutPrefix(s, sign)
	if !ok {
		return 0, 0, fmt.Errorf("bad hunk range %q", s)
	}
	a, b, hasLen := strings.Cut(s, ",")
	n = 1
	if start, err = strconv.Atoi(a); err == nil && hasLen {
		n, err = strconv.Atoi(b)
	}
	if err != nil {
		return 0, 0, fmt.Errorf("bad hunk range %q", s)
	}
	return start, n, nil
}

// apply applies f's hunks, in order, to the file content src.
func (f patchFile) apply(src string) (string, error) {
	lines := strings.Split(src, "\n")
	var out []string
	next := 0 // index in lines of the first line not yet copied
	for _, h := range f.hunks {
		at := h.start - 1
		if len(h.old) == 0 { // a pure addition names the line it follows
			at = h.start
		}
		if at < next || at+len(h.old) > len(lines) {
			return "", fmt.Errorf("hunk at line %d: out of order or past the end", h.start)
		}
		for j, want := range h.old {
			if lines[at+j] != want {
				return "", fmt.Errorf("hunk at line %d: line %d is %q, the patch expects %q", h.start, at+j+1, lines[at+j], want)
			}
		}
		out = append(out, lines[next:at]...)
		out = append(out, h.new...)
		next = at + len(h.old)
	}
	out = append(out, lines[next:]...)
	return strings.Join(out, "\n"), nil
}
