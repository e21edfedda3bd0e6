package plan

import (
	"os"
	"path/filepath"
	"testing"
)

// TestWriteOwnerOnly (issue 35 item 5): a saved plan is readable by its owner only, also
// when it replaces a file others could read; Read loads it back.
func TestWriteOwnerOnly(t *testing.T) {
	for _, tc := range []struct {
		name   string
		before bool // a world-readable file is there already
	}{{"new file", false}, {"over a world-readable file", true}} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "plan.json")
			if tc.before {
				if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			p := &Plan{Version: FormatVersion, Group: "demo", Namespace: "demo"}
			if err := p.Write(path); err != nil {
				t.Fatal(err)
			}
			fi, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if m := fi.Mode().Perm(); m != 0o600 {
				t.Errorf("saved plan mode %v, want -rw-------", m)
			}
			if _, err := Read(path); err != nil {
				t.Errorf("read back: %v", err)
			}
			if entries, _ := os.ReadDir(filepath.Dir(path)); len(entries) != 1 {
				t.Errorf("the directory holds %d entries, want the plan alone", len(entries))
			}
		})
	}
}
