package internal_test

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// maxLines is the longest a non-test Go file of internal/ may be (issue 13): a file that
// grows past it holds more than one concern and is split by concern.
const maxLines = 400

// TestFileLengths: no non-test Go file of internal/ is over maxLines lines.
func TestFileLengths(t *testing.T) {
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if n := bytes.Count(data, []byte("\n")); n > maxLines {
			t.Errorf("internal/%s: %d lines, over %d: split it by concern", path, n, maxLines)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
