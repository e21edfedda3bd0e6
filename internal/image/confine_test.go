package image

import (
	"archive/tar"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"slipway.dev/slipway/internal/image/imagetest"
)

// outsideTree makes a group directory holding a rootfs, and beside it a directory that is not
// the group's with a file of the same size as the rootfs's etc/motd, so that a read of one for
// the other would not be caught by its size. It returns the group directory and the outside one.
func outsideTree(t *testing.T) (group, outside string) {
	t.Helper()
	top := t.TempDir()
	group, outside = filepath.Join(top, "group"), filepath.Join(top, "outside")
	for _, d := range []string{filepath.Join(group, "rootfs", "etc"), outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	files := map[string]string{
		filepath.Join(group, "rootfs", "etc", "motd"):     "inside\n",
		filepath.Join(group, "rootfs", "etc", "hostname"): "web\n",
		filepath.Join(outside, "motd"):                    "SECRET\n",
	}
	for p, s := range files {
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return group, outside
}

// opened records the files a build opens, by their path, for the test's duration; before is
// called with each path before it is opened.
func opened(t *testing.T, before func(p string)) func() []string {
	var mu sync.Mutex
	var paths []string
	old := openFile
	openFile = func(f file) (*os.File, error) {
		mu.Lock()
		paths = append(paths, f.p)
		mu.Unlock()
		if before != nil {
			before(f.p)
		}
		return old(f)
	}
	t.Cleanup(func() { openFile = old })
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(paths)
	}
}

// TestRootfsLinksOutStayLinks: links in a rootfs that lead out of it, to a file or a directory,
// by an absolute or a relative target, are layer entries of their own and are not followed:
// only the tree's own files are opened.
func TestRootfsLinksOutStayLinks(t *testing.T) {
	t.Setenv("SOURCE_DATE_EPOCH", "")
	group, outside := outsideTree(t)
	root := filepath.Join(group, "rootfs")
	links := map[string]string{
		"etc/abs":  filepath.Join(outside, "motd"),
		"etc/rel":  "../../../outside/motd",
		"etc/dir":  outside,
		"etc/root": "/",
	}
	for p, target := range links {
		if err := os.Symlink(target, filepath.Join(root, p)); err != nil {
			t.Fatal(err)
		}
	}
	reads := opened(t, nil)
	img, _, err := NewBuilder(Options{}).Build(context.Background(), Source{Rootfs: root, Context: group})
	if err != nil {
		t.Fatal(err)
	}
	want := []imagetest.Entry{
		{Name: "etc/", Type: tar.TypeDir, Mode: 0o755},
		{Name: "etc/abs", Type: tar.TypeSymlink, Mode: 0o777, Link: links["etc/abs"]},
		{Name: "etc/dir", Type: tar.TypeSymlink, Mode: 0o777, Link: links["etc/dir"]},
		{Name: "etc/hostname", Type: tar.TypeReg, Mode: 0o644, Size: 4},
		{Name: "etc/motd", Type: tar.TypeReg, Mode: 0o644, Size: 7},
		{Name: "etc/rel", Type: tar.TypeSymlink, Mode: 0o777, Link: links["etc/rel"]},
		{Name: "etc/root", Type: tar.TypeSymlink, Mode: 0o777, Link: "/"},
	}
	if diff := cmp.Diff(want, imagetest.Entries(t, img)); diff != "" {
		t.Errorf("layer entries (-want +got):\n%s", diff)
	}
	for _, p := range reads() {
		if !strings.HasPrefix(p, root+string(filepath.Separator)) || strings.Contains(p, "etc/abs") || strings.Contains(p, "etc/rel") || strings.Contains(p, "etc/dir") {
			t.Errorf("opened %s: only the tree's own files should be", p)
		}
	}
}

// TestRootfsSwappedDuringBuild: an entry replaced by a link between the walk's lstat and its
// read (another process, a checkout) fails the build: a link leading out is not followed, and
// a link to another file of the tree is not that entry's content.
func TestRootfsSwappedDuringBuild(t *testing.T) {
	t.Setenv("SOURCE_DATE_EPOCH", "")
	tests := []struct {
		name string
		swap func(t *testing.T, root, outside string) // just before etc/motd is opened
		want string
	}{
		{"file for a link out, absolute", func(t *testing.T, root, outside string) {
			relink(t, filepath.Join(outside, "motd"), filepath.Join(root, "etc", "motd"))
		}, "etc/motd: path escapes from parent"},
		{"file for a link out, relative", func(t *testing.T, root, outside string) {
			relink(t, "../../../outside/motd", filepath.Join(root, "etc", "motd"))
		}, "etc/motd: path escapes from parent"},
		{"directory for a link out", func(t *testing.T, root, outside string) {
			if err := os.Rename(filepath.Join(root, "etc"), filepath.Join(root, "etc.old")); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(outside, filepath.Join(root, "etc")); err != nil {
				t.Fatal(err)
			}
		}, "etc/motd: path escapes from parent"},
		{"file for a link to another file of the tree", func(t *testing.T, root, outside string) {
			relink(t, "hostname", filepath.Join(root, "etc", "motd"))
		}, "etc/motd: replaced while read"},
	}
	for _, tt := range tests {
		for _, context := range []bool{false, true} {
			t.Run(tt.name+map[bool]string{false: "", true: ", with a context"}[context], func(t *testing.T) {
				group, outside := outsideTree(t)
				root := filepath.Join(group, "rootfs")
				var once sync.Once
				opened(t, func(p string) {
					if p == filepath.Join(root, "etc", "motd") {
						once.Do(func() { tt.swap(t, root, outside) })
					}
				})
				src := Source{Rootfs: root}
				if context {
					src.Context = group
				}
				_, _, err := NewBuilder(Options{}).Build(t.Context(), src)
				if err == nil || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("build: %v; want an error with %q", err, tt.want)
				}
				if strings.Contains(err.Error(), "SECRET") {
					t.Errorf("the error shows the outside file's content: %v", err)
				}
			})
		}
	}
}

// relink replaces the file at p with a link to target.
func relink(t *testing.T, target, p string) {
	t.Helper()
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, p); err != nil {
		t.Fatal(err)
	}
}

// TestContextRefusesLinkOut: with a context (the group directory), a rootfs or an archive that
// became a link leading out of it after the group file was checked fails the build; a link
// inside it is followed, and the image is the one the tree gives without a context.
func TestContextRefusesLinkOut(t *testing.T) {
	t.Setenv("SOURCE_DATE_EPOCH", "")
	group, outside := outsideTree(t)
	img, err := random.Image(100, 1)
	if err != nil {
		t.Fatal(err)
	}
	tag, _ := name.NewTag("example.org/x:y")
	if err := tarball.WriteToFile(filepath.Join(outside, "app.tar"), tag, img); err != nil {
		t.Fatal(err)
	}
	for target, link := range map[string]string{
		outside:                           "rootfs-out",
		filepath.Join(outside, "app.tar"): "app.tar",
		"rootfs":                          "rootfs-in",
	} {
		if err := os.Symlink(target, filepath.Join(group, link)); err != nil {
			t.Fatal(err)
		}
	}
	build := func(src Source) (string, error) {
		img, _, err := NewBuilder(Options{}).Build(t.Context(), src)
		if err != nil {
			return "", err
		}
		d, err := img.Digest()
		return d.String(), err
	}
	for _, tt := range []struct {
		name string
		src  Source
		want string
	}{
		{"rootfs", Source{Rootfs: filepath.Join(group, "rootfs-out")}, "rootfs " + outside + ": openat rootfs-out: path escapes from parent"},
		{"archive", Source{Archive: filepath.Join(group, "app.tar")}, "archive " + filepath.Join(group, "app.tar") + ": openat app.tar: path escapes from parent"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := build(tt.src); err != nil {
				t.Fatalf("without a context: %v", err)
			}
			tt.src.Context = group
			_, err := build(tt.src)
			if err == nil || err.Error() != tt.want {
				t.Errorf("with the group directory as context: %v; want %s", err, tt.want)
			}
		})
	}
	t.Run("link inside", func(t *testing.T) {
		want, err := build(Source{Rootfs: filepath.Join(group, "rootfs")})
		if err != nil {
			t.Fatal(err)
		}
		got, err := build(Source{Rootfs: filepath.Join(group, "rootfs-in"), Context: group})
		if err != nil || got != want {
			t.Errorf("through a link inside the context: %s, %v; want %s", got, err, want)
		}
	})
}
