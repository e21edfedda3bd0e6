package cli

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"slipway.dev/slipway/internal/testkit"
)

// TestValidateOutput is `validate`'s output and exit code, as text and as JSON, for a valid
// file, an invalid one and one that does not load at all (testdata/validate.txt).
func TestValidateOutput(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "rootfs"), 0o755); err != nil {
		t.Fatal(err)
	}
	files := []struct{ name, body string }{
		{"valid.yaml", "group: demo\nnodes:\n  web: {image: {rootfs: rootfs}}\n  db: {image: {rootfs: rootfs}}\n"},
		{"one.yaml", "group: demo\nnodes:\n  web: {image: {rootfs: rootfs}}\n"},
		{"invalid.yaml", "group: demo\nnodes:\n  web: {image: {rootfs: missing}, replicas: 2}\n"},
	}
	var out bytes.Buffer
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(dir, f.name), []byte(f.body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"valid.yaml", "one.yaml", "invalid.yaml", "absent.yaml"} {
		for _, args := range [][]string{{"validate"}, {"validate", "-o", "json"}} {
			root := NewRoot()
			var stdout, stderr bytes.Buffer
			root.SetOut(&stdout)
			root.SetErr(&stderr)
			root.SetArgs(append([]string{"-f", filepath.Join(dir, name)}, args...))
			err := root.Execute()
			fmt.Fprintf(&out, "== %s %v: exit %d, error %q\n-- stdout\n%s-- stderr\n%s", name, args, ExitCode(err), fmt.Sprint(err), stdout.String(), stderr.String())
		}
	}
	testkit.Golden(t, filepath.Join("testdata", "validate.txt"), bytes.ReplaceAll(out.Bytes(), []byte(dir), []byte("DIR")))
}
