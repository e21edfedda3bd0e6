package realpath

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// Every path of a tree of links resolves as filepath.EvalSymlinks resolves it, asked in any
// order of one Cache, and fails where it fails.
func TestEvalIsEvalSymlinks(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"g/nodes/a/rootfs/etc", "g/nodes/b", "other/rootfs", "deep/x/y"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	links := map[string]string{
		"g/nodes/b/rootfs": "../a/rootfs",               // relative, up
		"g/nodes/c":        filepath.Join(dir, "other"), // absolute
		"g/nodes/d":        "c",                         // a link to a link
		"g/nodes/e":        "../../deep/x/y/../..",      // .. after a real directory
		"g/nodes/loop":     "loop2",
		"g/nodes/loop2":    "loop",
		"g/nodes/dangling": "missing",
		"g/link-to-nodes":  "nodes",
		"deep/x/y/up":      "../../../g",
	}
	for l, target := range links {
		if err := os.Symlink(target, filepath.Join(dir, l)); err != nil {
			t.Fatal(err)
		}
	}
	paths := []string{
		"g", "g/nodes/a/rootfs", "g/nodes/b/rootfs", "g/nodes/b/rootfs/etc", "g/nodes/c/rootfs",
		"g/nodes/d/rootfs", "g/nodes/e", "g/nodes/e/x", "g/link-to-nodes/b/rootfs",
		"deep/x/y/up/nodes/d/rootfs", "g/nodes/a/rootfs/../../b/rootfs", "g/nodes/b/rootfs/../etc-less", "g/nodes/f",
		"g/nodes/missing", "g/nodes/a/rootfs/etc/../../rootfs", "g/./nodes//a/rootfs/", "g/nodes/b/rootfs/../../a",
		"g/nodes/dangling", "g/nodes/loop", "g/nodes/a/rootfs/etc/none/deeper",
	}
	var c Cache
	for round := range 2 { // the second round answers from the cache
		for _, p := range paths {
			abs := dir + "/" + p // as written: EvalSymlinks cleans nothing first
			want, wantErr := filepath.EvalSymlinks(abs)
			got, err := c.Eval(abs)
			if got != want || (err == nil) != (wantErr == nil) {
				t.Errorf("round %d: Eval(%s) = %q, %v; EvalSymlinks: %q, %v", round, p, got, err, want, wantErr)
			}
		}
	}
	if _, err := c.Eval(filepath.Join(dir, "g/nodes/loop")); !errors.Is(err, ErrTooManyLinks) {
		t.Errorf("a loop: %v, want %v", err, ErrTooManyLinks)
	}
}
