package image

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// countOpens counts the files the layers read while the test runs.
func countOpens(t *testing.T) *atomic.Int64 {
	t.Helper()
	var n atomic.Int64
	old := openFile
	openFile = func(f file) (*os.File, error) { n.Add(1); return old(f) }
	t.Cleanup(func() { openFile = old })
	return &n
}

// countWalks counts the trees whose directories are listed while the test runs.
func countWalks(t *testing.T) *atomic.Int64 {
	t.Helper()
	var n atomic.Int64
	old := walkDir
	walkDir = func(root string, fn fs.WalkDirFunc) error { n.Add(1); return old(root, fn) }
	t.Cleanup(func() { walkDir = old })
	return &n
}

func writeSmallTree(t *testing.T, root string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(root, "etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"etc/hostname", "etc/bench"} {
		if err := os.WriteFile(filepath.Join(root, f), []byte(f+" n001\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("hostname", filepath.Join(root, "etc", "name")); err != nil {
		t.Fatal(err)
	}
}

func ctimeOf(t *testing.T, p string) int64 {
	t.Helper()
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t).Ctim.Nano()
}

// changeCtime changes p by do, repeated until the kernel's coarse clock has ticked so the ctime
// differs from before: what any real edit a tick later gives, and what racyMargin waits for.
func changeCtime(t *testing.T, p string, do func() error) {
	t.Helper()
	before := ctimeOf(t, p)
	for deadline := time.Now().Add(5 * time.Second); ; {
		if err := do(); err != nil {
			t.Fatal(err)
		}
		if ctimeOf(t, p) != before {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: ctime did not change", p)
		}
	}
}

func diffIDOf(t *testing.T, b *LocalBuilder, root string) v1.Hash {
	t.Helper()
	img, _, err := b.Build(context.Background(), Source{Rootfs: root})
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	return cf.RootFS.DiffIDs[0]
}

// settledBuilder has an index whose clock runs an hour ahead, so the files the test has just
// written count as settled.
func settledBuilder(index string) *LocalBuilder {
	b := NewBuilder(Options{TreeIndex: index})
	b.trees.now = func() time.Time { return time.Now().Add(time.Hour) }
	return b
}

// A rootfs whose entries lstat as recorded is not read again, in this run or the next (issue
// 17); any change an edit can make, the mtime set back or not, is read again, and the digest is
// always the one a build without an index gives.
func TestTreeIndexSkipsUnchangedTree(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(t *testing.T, root string)
		reread bool
	}{
		{"unchanged", func(*testing.T, string) {}, false},
		{"same-length edit, mtime set back", func(t *testing.T, root string) {
			p := filepath.Join(root, "etc", "bench")
			fi, _ := os.Stat(p)
			changeCtime(t, p, func() error {
				if err := os.WriteFile(p, []byte("etc/bench n002\n"), 0o644); err != nil {
					return err
				}
				return os.Chtimes(p, fi.ModTime(), fi.ModTime())
			})
		}, true},
		{"chmod", func(t *testing.T, root string) {
			p := filepath.Join(root, "etc", "hostname")
			mode := os.FileMode(0o600)
			changeCtime(t, p, func() error { mode ^= 0o040; return os.Chmod(p, mode) })
		}, true},
		{"rename", func(t *testing.T, root string) {
			if err := os.Rename(filepath.Join(root, "etc", "bench"), filepath.Join(root, "etc", "bench2")); err != nil {
				t.Fatal(err)
			}
		}, true},
		{"file added", func(t *testing.T, root string) {
			if err := os.WriteFile(filepath.Join(root, "etc", "motd"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}, true},
		{"empty directory added at the root", func(t *testing.T, root string) {
			if err := os.Mkdir(filepath.Join(root, "var"), 0o755); err != nil {
				t.Fatal(err)
			}
		}, true},
		{"file removed", func(t *testing.T, root string) {
			if err := os.Remove(filepath.Join(root, "etc", "bench")); err != nil {
				t.Fatal(err)
			}
		}, true},
		{"directory swapped for a copy", func(t *testing.T, root string) {
			if err := os.Rename(filepath.Join(root, "etc"), filepath.Join(t.TempDir(), "etc")); err != nil {
				t.Fatal(err)
			}
			writeSmallTree(t, root)
		}, true},
		{"symlink replaced", func(t *testing.T, root string) {
			p := filepath.Join(root, "etc", "name")
			changeCtime(t, p, func() error {
				if err := os.Remove(p); err != nil {
					return err
				}
				return os.Symlink("bench", p)
			})
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			root, index := filepath.Join(dir, "rootfs"), filepath.Join(dir, "index.json")
			writeSmallTree(t, root)
			first := settledBuilder(index)
			diffIDOf(t, first, root)
			if err := first.SaveIndex(); err != nil {
				t.Fatal(err)
			}
			tc.change(t, root)
			opens, walks := countOpens(t), countWalks(t)
			got := diffIDOf(t, settledBuilder(index), root)
			if n := opens.Load(); (n > 0) != tc.reread {
				t.Errorf("the next run opened %d files; want them read again: %v", n, tc.reread)
			}
			if n := walks.Load(); !tc.reread && n != 0 {
				t.Errorf("the next run listed the unchanged tree's directories (%d walks): its recorded lstats prove it", n)
			}
			if want := diffIDOf(t, NewBuilder(Options{}), root); got != want {
				t.Errorf("DiffID %s with the index, %s without", got, want)
			}
		})
	}
}

// A tree changed within racyMargin of the walk is read every time until it settles: a change
// in the same tick of the kernel's clock would leave its ctime as recorded.
func TestTreeIndexRereadsRecentTrees(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, "rootfs")
	writeSmallTree(t, root)
	b := NewBuilder(Options{TreeIndex: filepath.Join(dir, "index.json")})
	opens := countOpens(t)
	for range 2 {
		diffIDOf(t, b, root)
	}
	if n := opens.Load(); n != 4 {
		t.Errorf("two builds of a 2-file tree written just now opened %d files, want 4", n)
	}
	if err := b.SaveIndex(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "index.json")); !os.IsNotExist(err) {
		t.Errorf("index written for an unsettled tree: %v", err)
	}
}

// The index keeps the trees of the last run only, and is not rewritten when nothing changed.
func TestTreeIndexSave(t *testing.T) {
	dir := t.TempDir()
	a, c, index := filepath.Join(dir, "a"), filepath.Join(dir, "c"), filepath.Join(dir, "index.json")
	writeSmallTree(t, a)
	writeSmallTree(t, c)
	b := settledBuilder(index)
	diffIDOf(t, b, a)
	diffIDOf(t, b, c)
	if err := b.SaveIndex(); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(index)
	if err != nil {
		t.Fatal(err)
	}
	b = settledBuilder(index)
	diffIDOf(t, b, a)
	diffIDOf(t, b, c)
	if err := b.SaveIndex(); err != nil {
		t.Fatal(err)
	}
	if again, _ := os.Stat(index); !again.ModTime().Equal(fi.ModTime()) || !os.SameFile(fi, again) {
		t.Errorf("index rewritten by a run that changed nothing")
	}
	b = settledBuilder(index)
	diffIDOf(t, b, a)
	if err := b.SaveIndex(); err != nil {
		t.Fatal(err)
	}
	b = settledBuilder(index)
	b.trees.load()
	if _, ok := b.trees.trees[treeKey(c, time.Unix(0, 0).UTC())]; ok || len(b.trees.trees) != 1 {
		t.Errorf("index after a run that built only %s: %d trees, %s kept: %v", a, len(b.trees.trees), c, ok)
	}
}

// A rootfs given as a link to a directory is the directory's tree: a change behind the link is
// read, though the link's own lstat is as recorded.
func TestTreeIndexRereadsLinkedRootfs(t *testing.T) {
	dir := t.TempDir()
	target, root, index := filepath.Join(dir, "tree"), filepath.Join(dir, "rootfs"), filepath.Join(dir, "index.json")
	writeSmallTree(t, target)
	if err := os.Symlink("tree", root); err != nil {
		t.Fatal(err)
	}
	first := settledBuilder(index)
	before := diffIDOf(t, first, root)
	if err := first.SaveIndex(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(target, "etc", "motd"), []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got := diffIDOf(t, settledBuilder(index), root)
	if want := diffIDOf(t, NewBuilder(Options{}), root); got != want || got == before {
		t.Errorf("DiffID after a change behind the link: %s with the index, %s without, %s before", got, want, before)
	}
}

// go test ./internal/image -run '^$' -bench RecordedTrees: 1,000 trees of the bench's shape
// (a directory, two files) proved unchanged by a walk, listing each directory, against an
// lstat of each recorded path.
func BenchmarkRecordedTrees(b *testing.B) {
	dir := b.TempDir()
	roots := make([]string, 1000)
	for i := range roots {
		roots[i] = filepath.Join(dir, strconv.Itoa(i), "rootfs")
		for _, f := range []string{"etc/hostname", "etc/bench"} {
			if err := os.MkdirAll(filepath.Dir(filepath.Join(roots[i], f)), 0o755); err != nil {
				b.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(roots[i], f), []byte(f), 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	cutoff := time.Now().Add(time.Hour)
	_, paths, _, err := treeStats(roots[0], cutoff)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("walk", func(b *testing.B) {
		for b.Loop() {
			for _, r := range roots {
				if _, _, _, err := treeStats(r, cutoff); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("recorded", func(b *testing.B) {
		for b.Loop() {
			for _, r := range roots {
				if recordedStats(r, paths) == "" {
					b.Fatal("unreadable")
				}
			}
		}
	})
}
