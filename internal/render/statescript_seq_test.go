package render

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestStateScriptSequences runs StateScript through sequences of releases, rollbacks and
// removals, the copy's hand-over included (issue 35 item 1), and checks the tree, the version
// and whether a copy is held at the end.
func TestStateScriptSequences(t *testing.T) {
	full := stub(t, "df", "echo 'Filesystem 1024-blocks Used Available Capacity Mounted on'; echo '/dev/vdb 1000 999 1 99% /var/lib'\n")
	type run struct {
		mode, version, path string
		// restore is the hand-over a rollback template names (EnvStateRestore)
		restore string
		migrate bool   // the release's container changes the data after the step
		fails   string // the step fails saying this
	}
	for _, tc := range []struct {
		name string
		runs []run
		// want: the tree is the original (or the migrated one), the version, a copy held
		original bool
		version  string
		held     bool
	}{
		{name: "not enough free space: nothing changed, nothing to restore",
			runs: []run{
				{mode: "start", version: "2", path: full, fails: "not enough free space to copy"},
				{mode: "start", version: "1"},
			},
			original: true, version: "1"},
		{name: "success, then the removal",
			runs:    []run{{mode: "start", version: "2", migrate: true}, {mode: "remove", version: "2"}, {mode: "remove", version: "2"}},
			version: "2"},
		{name: "the removal refuses data of another version",
			runs:    []run{{mode: "start", version: "2", migrate: true}, {mode: "remove", version: "3", fails: "the data is at version '2', not '3'"}},
			version: "2", held: true},
		{name: "two releases that never ran ready keep the first copy",
			runs:     []run{{mode: "start", version: "2", migrate: true}, {mode: "start", version: "3", migrate: true}, {mode: "start", version: "1"}},
			original: true, version: "1"},
		{name: "a release after a success copies afresh",
			runs: []run{
				{mode: "start", version: "2", migrate: true}, {mode: "remove", version: "2"},
				{mode: "start", version: "3"}, {mode: "start", version: "2"},
			},
			version: "2"},
		{name: "the file reverted before the new release ran ready",
			runs:     []run{{mode: "start", version: "2", migrate: true}, {mode: "start", version: "1"}},
			original: true, version: "1"},
		{name: "the rollback template puts back the copy of its hand-over",
			runs:     []run{{mode: "start", version: "2", migrate: true}, {mode: "start", version: "1", restore: "2"}},
			original: true, version: "1"},
		{name: "the rollback template after a pod that never handed the data on",
			runs:     []run{{mode: "start", version: "1", restore: "2"}},
			original: true, version: "1"},
		// Issue 35 item 1: the state forgot the copy (destroy --keep-claims), the release at 2
		// ran for months, and a migration to 3 failed: the copy of 1 is not the data 2 ran
		// on, and must not come back, nor may 2 start on the data 3 migrated.
		{name: "a rollback refuses a copy of another hand-over",
			runs: []run{
				{mode: "start", version: "2", migrate: true}, {mode: "start", version: "2"},
				{mode: "start", version: "3"},
				{mode: "start", version: "2", restore: "3", fails: "refusing to put a copy back: this template goes back to version '2' from the migration to '3', but the data is at version '3' and the volume holds a copy taken at version '1' and handed to '3'"},
			},
			version: "3", held: true},
		// The data was handed on without its copy following (by hand, or by a hand-over the
		// copy was not recorded for): going back to 1 is a migration, not a restore.
		{name: "a copy not tied to the data is neither put back nor kept",
			runs: []run{
				{mode: "start", version: "2", migrate: true}, {mode: "hand", version: "3"},
				{mode: "start", version: "1"},
			},
			version: "1", held: true},
		// A copy left by an older slipway records no hand-over (no copy/to): it may be the
		// data before the release that never ran ready, or one that ran for months since
		// (issue 35 item 1). It is never put back: going back to its version refuses with
		// nothing changed, and a migration drops it and copies afresh.
		{name: "going back to an older slipway's copy refuses it",
			runs: []run{
				{mode: "start", version: "2", migrate: true}, {mode: "legacy"},
				{mode: "start", version: "1", fails: "a copy taken at version '1' by an older slipway, which did not record the version it was handed to"},
				{mode: "start", version: "1", fails: "nothing was changed"},
			},
			version: "2", held: true},
		{name: "a rollback template refuses an older slipway's copy",
			runs: []run{
				{mode: "start", version: "2", migrate: true}, {mode: "legacy"},
				{mode: "start", version: "1", restore: "2", fails: "refusing to put a copy back"},
			},
			version: "2", held: true},
		{name: "a migration drops an older slipway's copy and copies afresh",
			runs: []run{
				{mode: "start", version: "2", migrate: true}, {mode: "legacy"},
				{mode: "start", version: "3"}, {mode: "start", version: "2", restore: "3"},
			},
			version: "2"},
		{name: "an older slipway's copy taken at the data's version is copied afresh too",
			runs: []run{
				{mode: "start", version: "2", migrate: true}, {mode: "remove", version: "2"},
				{mode: "legacy-copy"}, {mode: "start", version: "3"}, {mode: "start", version: "2", restore: "3"},
			},
			version: "2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			mustRun(t, root, "start", "1")
			makeTree(t, root)
			original := manifest(t, root)
			var migrated []string
			for i, r := range tc.runs {
				switch r.mode {
				case "hand":
					if err := os.WriteFile(filepath.Join(root, StateMetaDir, "version"), []byte(r.version), 0o644); err != nil {
						t.Fatal(err)
					}
					continue
				case "legacy": // the copy as an older slipway left it: no record of its hand-over
					if err := os.Remove(filepath.Join(root, StateMetaDir, "copy", "to")); err != nil {
						t.Fatal(err)
					}
					continue
				case "legacy-copy": // an older slipway's copy of the data as it is, of nothing since
					legacyCopy(t, root)
					continue
				}
				out, err := runScript(t, root, r.mode, r.version, r.path, EnvStateRestore+"="+r.restore)
				switch {
				case r.fails == "" && err != nil:
					t.Fatalf("run %d (%s at %s): %v\n%s", i, r.mode, r.version, err, out)
				case r.fails != "" && (err == nil || !strings.Contains(out, r.fails)):
					t.Fatalf("run %d (%s at %s): err %v, output %q; want a failure saying %q", i, r.mode, r.version, err, out, r.fails)
				}
				if r.migrate {
					migrate(t, root)
					migrated = manifest(t, root)
				}
			}
			want := migrated
			if tc.original {
				want = original
			}
			if diff := cmp.Diff(want, manifest(t, root)); diff != "" {
				t.Errorf("the tree (-want +got):\n%s", diff)
			}
			if v, _ := metaFile(t, root, "version"); v != tc.version {
				t.Errorf("version = %q, want %q", v, tc.version)
			}
			if _, held := metaFile(t, root, "copy/complete"); held != tc.held {
				t.Errorf("copy held = %v, want %v", held, tc.held)
			}
		})
	}
}

// legacyCopy writes, as an older slipway left it, a copy of a stale tree taken at the data's
// own version: from, complete and data/, without to.
func legacyCopy(t *testing.T, root string) {
	t.Helper()
	meta := filepath.Join(root, StateMetaDir)
	v, _ := os.ReadFile(filepath.Join(meta, "version"))
	for rel, body := range map[string]string{"copy/from": string(v), "copy/complete": "", "copy/data/stale": "stale\n"} {
		p := filepath.Join(meta, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
