package internal_test

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// maxLines is the longest a Go file of ours may be (issue 13; test files, e2e/ and cmd/ since
// issue 45): a file that grows past it holds more than one concern and is split by concern.
const maxLines = 400

// checkedDirs are the module's directories of Go code, from its root (the parent of internal/,
// where this test runs).
var checkedDirs = []string{"internal", "e2e", "cmd"}

// generated is Go's mark of a generated file (go help generate), on a line of its own before
// the package clause.
var generated = regexp.MustCompile(`^// Code generated .* DO NOT EDIT\.$`)

// TestFileLengths: no Go file of internal/, e2e/ or cmd/, test files included, is over maxLines
// lines. Not ours, so not checked: what the go tool ignores (testdata/, directories starting
// with "." or "_") and generated files.
func TestFileLengths(t *testing.T) {
	root := ".."
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root: %v", err)
	}
	checked := 0
	for _, dir := range checkedDirs {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if name := d.Name(); name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
					return fs.SkipDir
				}
				return nil
			}
			if !strings.HasSuffix(path, ".go") {
				return nil
			}
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			if isGenerated(data) {
				return nil
			}
			checked++
			if n := bytes.Count(data, []byte("\n")); n > maxLines {
				rel, _ := filepath.Rel(root, path)
				t.Errorf("%s: %d lines, over %d: split it by concern", rel, n, maxLines)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	// The walk found the code: a wrong root would check nothing and pass.
	if checked == 0 {
		t.Fatalf("no Go file under %v of %s", checkedDirs, root)
	}
}

// isGenerated reports whether a line before the package clause of the Go file data is Go's
// generated-file mark.
func isGenerated(data []byte) bool {
	for line := range strings.Lines(string(data)) {
		line = strings.TrimSuffix(line, "\n")
		if strings.HasPrefix(line, "package ") {
			return false
		}
		if generated.MatchString(line) {
			return true
		}
	}
	return false
}
