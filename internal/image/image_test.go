package image

import (
	"archive/tar"
	"context"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"

	"slipway.dev/slipway/internal/image/imagetest"
)

// copyTree copies src to dst keeping modes, symlinks and hard links, but not file times: the
// copy gets new ones, as a checkout or a rebuild of the tree would.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	linked := map[uint64]string{}
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		out := filepath.Join(dst, rel)
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		switch {
		case fi.IsDir():
			if err := os.MkdirAll(out, 0o755); err != nil {
				return err
			}
			return os.Chmod(out, fi.Mode()&(fs.ModePerm|fs.ModeSticky|fs.ModeSetgid))
		case fi.Mode()&fs.ModeSymlink != 0:
			l, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(l, out)
		}
		st := fi.Sys().(*syscall.Stat_t)
		if first, ok := linked[st.Ino]; ok && st.Nlink > 1 {
			return os.Link(first, out)
		}
		linked[st.Ino] = out
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if err := os.WriteFile(out, b, 0o600); err != nil {
			return err
		}
		return os.Chmod(out, fi.Mode()&(fs.ModePerm|fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky))
	})
	if err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(72 * time.Hour)
	_ = filepath.WalkDir(dst, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type()&fs.ModeSymlink == 0 {
			_ = os.Chtimes(p, later, later)
		}
		return nil
	})
}

func TestRootfsReproducible(t *testing.T) {
	t.Setenv("SOURCE_DATE_EPOCH", "")
	a := filepath.Join(t.TempDir(), "rootfs")
	imagetest.WriteTree(t, a)
	b := filepath.Join(t.TempDir(), "elsewhere", "copy")
	copyTree(t, a, b)

	build := func(root string) v1.Image {
		img, warnings, err := NewBuilder(Options{}).Build(context.Background(), Source{
			Rootfs: root,
			Labels: map[string]string{ServedLabel: "tcp/22,tcp/80,udp/53"},
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(warnings) > 0 {
			t.Fatalf("warnings: %v", warnings)
		}
		return img
	}
	imgA, imgB := build(a), build(b)
	// A rootfs named through a symlink is the tree it points to.
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(b, link); err != nil {
		t.Fatal(err)
	}
	imgC := build(link)

	t.Run("digests", func(t *testing.T) {
		for _, f := range []func(v1.Image) (v1.Hash, error){v1.Image.Digest, v1.Image.ConfigName} {
			da, err := f(imgA)
			if err != nil {
				t.Fatal(err)
			}
			for _, img := range []v1.Image{imgB, imgC} {
				db, err := f(img)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(da, db); diff != "" {
					t.Errorf("digest of the copy differs (-want +got):\n%s", diff)
				}
			}
		}
		ta, _ := TagFor(imgA)
		tb, _ := TagFor(imgB)
		if ta != tb || !strings.HasPrefix(ta, "c-") || len(ta) != 18 {
			t.Errorf("tags %q and %q: want one tag c-<16 hex>", ta, tb)
		}
	})

	t.Run("entries", func(t *testing.T) {
		want := []imagetest.Entry{
			{Name: "etc/", Type: tar.TypeDir, Mode: 0o755},
			{Name: "etc/hostname", Type: tar.TypeReg, Mode: 0o644, Size: 4},
			{Name: "etc/shadow", Type: tar.TypeReg, Mode: 0o600, Size: 15},
			{Name: "etc/systemd/", Type: tar.TypeDir, Mode: 0o755},
			{Name: "etc/systemd/init", Type: tar.TypeSymlink, Mode: 0o777, Link: "../sbin/init"},
			{Name: "sbin/", Type: tar.TypeDir, Mode: 0o755},
			{Name: "sbin/init", Type: tar.TypeReg, Mode: 0o4755, Size: 25},
			{Name: "sbin/init-hard", Type: tar.TypeLink, Mode: 0o4755, Link: "sbin/init"},
			{Name: "tmp/", Type: tar.TypeDir, Mode: 0o1777},
		}
		if diff := cmp.Diff(want, imagetest.Entries(t, imgB)); diff != "" {
			t.Errorf("layer entries (-want +got):\n%s", diff)
		}
	})

	t.Run("config", func(t *testing.T) {
		raw, err := imgA.RawConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(raw), "created\"") {
			t.Errorf("config has a creation time: %s", raw)
		}
		cf, err := imgA.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		got := []any{cf.Architecture, cf.OS, cf.Config.Entrypoint, cf.Config.Cmd, cf.Config.Labels}
		want := []any{"amd64", "linux", []string{"/sbin/init"}, []string(nil), map[string]string{ServedLabel: "tcp/22,tcp/80,udp/53"}}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("config (-want +got):\n%s", diff)
		}
	})

	t.Run("source date epoch", func(t *testing.T) {
		t.Setenv("SOURCE_DATE_EPOCH", "1700000000")
		img := build(a)
		for _, e := range imagetest.Entries(t, img) {
			if e.ModTime != 1700000000 {
				t.Fatalf("entry %s: time %d, want SOURCE_DATE_EPOCH", e.Name, e.ModTime)
			}
		}
		if d, _ := img.ConfigName(); func() bool { d0, _ := imgA.ConfigName(); return d == d0 }() {
			t.Error("a different SOURCE_DATE_EPOCH gave the same image")
		}
	})
}

func TestSpecialFilesSkipped(t *testing.T) {
	// A short path: unix socket names are limited to about 100 bytes.
	root, err := os.MkdirTemp("", "sw")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	if err := os.WriteFile(filepath.Join(root, "a"), []byte("a"), 0o644); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(root, "s.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()

	img, warnings, err := NewBuilder(Options{}).Build(context.Background(), Source{Rootfs: root})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{sock + ": socket skipped"}, warnings); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
	want := []imagetest.Entry{{Name: "a", Type: tar.TypeReg, Mode: 0o644, Size: 1}}
	if diff := cmp.Diff(want, imagetest.Entries(t, img)); diff != "" {
		t.Errorf("entries (-want +got):\n%s", diff)
	}
}

func TestBuildErrors(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		src  Source
		want string
	}{
		{"none", Source{}, "exactly one of rootfs, archive and base"},
		{"two", Source{Rootfs: dir, Archive: file}, "exactly one of rootfs, archive and base"},
		{"add without base", Source{Rootfs: dir, Add: []AddFile{{file, "/f"}}}, "add needs a base"},
		{"missing rootfs", Source{Rootfs: filepath.Join(dir, "nope")}, "rootfs " + filepath.Join(dir, "nope")},
		{"rootfs is a file", Source{Rootfs: file}, "not a directory"},
		{"archive not a tar", Source{Archive: file}, "archive " + file},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := NewBuilder(Options{}).Build(context.Background(), tc.src)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestWriteLayout(t *testing.T) {
	root := t.TempDir()
	imagetest.WriteTree(t, root)
	b := NewBuilder(Options{})
	img, _, err := b.Build(context.Background(), Source{Rootfs: root})
	if err != nil {
		t.Fatal(err)
	}
	tag, _ := b.Tag(img)
	dir := filepath.Join(t.TempDir(), "out")
	ref := "demo/web:" + tag
	for range 2 { // rewriting gives the same index, not a longer one
		if err := WriteLayout(dir, []LayoutImage{{Ref: ref, Image: img}}); err != nil {
			t.Fatal(err)
		}
	}
	idx, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	want, _ := img.Digest()
	var got []string
	for _, d := range im.Manifests {
		got = append(got, d.Annotations[RefNameAnnotation]+"@"+d.Digest.String())
	}
	if diff := cmp.Diff([]string{ref + "@" + want.String()}, got); diff != "" {
		t.Errorf("layout index (-want +got):\n%s", diff)
	}
	// Every file of the layout has one mode: the layer blob too, and no executable index.
	modes := map[string]string{}
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err == nil && info.Mode().Perm() != 0o644 {
			rel, _ := filepath.Rel(dir, path)
			modes[rel] = info.Mode().Perm().String()
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(modes) > 0 {
		t.Errorf("layout files not 0644: %v", modes)
	}
}
