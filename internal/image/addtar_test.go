package image

import (
	"archive/tar"
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"slipway.dev/slipway/internal/image/imagetest"
)

// addLayer writes the layer of files, read through context, and lists its entries with the
// content of each regular file.
func addLayer(t *testing.T, files []AddFile, context string) ([]imagetest.Entry, map[string]string, error) {
	t.Helper()
	var buf bytes.Buffer
	if _, err := addTar(files, context, time.Unix(0, 0).UTC())(&buf); err != nil {
		return nil, nil, err
	}
	out, content := imagetest.ReadTar(t, &buf)
	return out, content, nil
}

// noReadOf fails the test when a layer opens one of the files at paths, whatever the name it
// was opened by; before, when set, is called with each name before it is opened.
func noReadOf(t *testing.T, before func(p string), paths ...string) {
	t.Helper()
	var mu sync.Mutex
	var fis []os.FileInfo
	for _, p := range paths {
		if fi, err := os.Stat(p); err == nil {
			fis = append(fis, fi)
		}
	}
	old := openFile
	openFile = func(f file) (*os.File, error) {
		if before != nil {
			before(f.p)
		}
		got, err := old(f)
		if err != nil {
			return got, err
		}
		if fi, err := got.Stat(); err == nil {
			mu.Lock()
			defer mu.Unlock()
			for _, out := range fis {
				if os.SameFile(fi, out) {
					t.Errorf("%s: opened a file outside the group directory", f.p)
				}
			}
		}
		return got, nil
	}
	t.Cleanup(func() { openFile = old })
}

// TestAddLinksOut: with the group directory as context, an `add` source that is, or lies
// under, a link leading out of it is refused, whether the link was there when the group file
// was loaded or was swapped in since; a link inside it is followed; a directory source's own
// links are entries of the layer, never followed.
func TestAddLinksOut(t *testing.T) {
	const passwd = "/etc/passwd"
	tests := []struct {
		name    string
		prepare func(t *testing.T, group, outside string) // after the load, before the build
		src     string                                    // in the group directory
		want    []imagetest.Entry                         // the layer, or wantErr
		wantErr string
	}{
		{name: "file link out, absolute", src: "leak", wantErr: "add {group}/leak: statat leak: path escapes from parent",
			prepare: func(t *testing.T, group, outside string) { link(t, filepath.Join(outside, "motd"), group, "leak") }},
		{name: "file link out, relative", src: "leak", wantErr: "add {group}/leak: statat leak: path escapes from parent",
			prepare: func(t *testing.T, group, outside string) { link(t, "../outside/motd", group, "leak") }},
		{name: "directory link out", src: "leak", wantErr: "add {group}/leak: statat leak: path escapes from parent",
			prepare: func(t *testing.T, group, outside string) { link(t, outside, group, "leak") }},
		{name: "file under a directory link out", src: "leak/motd", wantErr: "add {group}/leak/motd: statat leak/motd: path escapes from parent",
			prepare: func(t *testing.T, group, outside string) { link(t, outside, group, "leak") }},
		{name: "file swapped for a link to /etc/passwd", src: "rootfs/etc/motd", wantErr: "add {group}/rootfs/etc/motd: statat rootfs/etc/motd: path escapes from parent",
			prepare: func(t *testing.T, group, outside string) {
				relink(t, passwd, filepath.Join(group, "rootfs", "etc", "motd"))
			}},
		{name: "directory swapped for a link out", src: "rootfs", wantErr: "add {group}/rootfs: statat rootfs: path escapes from parent",
			prepare: func(t *testing.T, group, outside string) {
				if err := os.Rename(filepath.Join(group, "rootfs"), filepath.Join(group, "rootfs.old")); err != nil {
					t.Fatal(err)
				}
				link(t, outside, group, "rootfs")
			}},
		{name: "file link inside", src: "motd", want: []imagetest.Entry{{Name: "dst", Type: tar.TypeReg, Mode: 0o644, Size: 7}},
			prepare: func(t *testing.T, group, outside string) { link(t, "rootfs/etc/motd", group, "motd") }},
		{name: "directory link inside", src: "tree", want: []imagetest.Entry{
			{Name: "dst/", Type: tar.TypeDir, Mode: 0o755},
			{Name: "dst/etc/", Type: tar.TypeDir, Mode: 0o755},
			{Name: "dst/etc/hostname", Type: tar.TypeReg, Mode: 0o644, Size: 4},
			{Name: "dst/etc/motd", Type: tar.TypeReg, Mode: 0o644, Size: 7},
		}, prepare: func(t *testing.T, group, outside string) { link(t, "rootfs", group, "tree") }},
		{name: "directory with links out", src: "rootfs", want: []imagetest.Entry{
			{Name: "dst/", Type: tar.TypeDir, Mode: 0o755},
			{Name: "dst/etc/", Type: tar.TypeDir, Mode: 0o755},
			{Name: "dst/etc/dir", Type: tar.TypeSymlink, Mode: 0o777, Link: "../../../outside"},
			{Name: "dst/etc/hostname", Type: tar.TypeReg, Mode: 0o644, Size: 4},
			{Name: "dst/etc/motd", Type: tar.TypeSymlink, Mode: 0o777, Link: passwd},
			{Name: "dst/etc/rel", Type: tar.TypeSymlink, Mode: 0o777, Link: "../../../outside/motd"},
		}, prepare: func(t *testing.T, group, outside string) {
			root := filepath.Join(group, "rootfs", "etc")
			link(t, "../../../outside", root, "dir")
			link(t, "../../../outside/motd", root, "rel")
			relink(t, passwd, filepath.Join(root, "motd")) // swapped in since the load
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			group, outside := outsideTree(t)
			tt.prepare(t, group, outside)
			noReadOf(t, nil, filepath.Join(outside, "motd"), passwd)
			got, content, err := addLayer(t, []AddFile{{Src: filepath.Join(group, tt.src), Dst: "/dst"}}, group)
			if tt.wantErr != "" {
				want := strings.ReplaceAll(tt.wantErr, "{group}", group)
				if err == nil || err.Error() != want {
					t.Fatalf("add: %v; want %s", err, want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("layer entries (-want +got):\n%s", diff)
			}
			for name, s := range content {
				if strings.Contains(s, "SECRET") || strings.Contains(s, "root:") {
					t.Errorf("%s: has the content of a file outside the group directory", name)
				}
			}
		})
	}
}

// TestAddSwappedDuringBuild: a file of an `add` source replaced by a link between the lstat
// that wrote its header and its read fails the build, with or without a context, and the
// file outside is not opened.
func TestAddSwappedDuringBuild(t *testing.T) {
	for _, tt := range []struct{ name, src, entry, want string }{
		{"file source", "rootfs/etc/motd", "rootfs/etc/motd", "path escapes from parent"},
		{"file of a directory source", "rootfs", "rootfs/etc/motd", "openat etc/motd: path escapes from parent"},
	} {
		for _, target := range []string{"/etc/passwd", "../../../outside/motd"} {
			t.Run(tt.name+", link to "+target, func(t *testing.T) {
				group, outside := outsideTree(t)
				var once sync.Once
				noReadOf(t, func(p string) {
					if p == filepath.Join(group, tt.entry) {
						once.Do(func() { relink(t, target, p) })
					}
				}, filepath.Join(outside, "motd"), "/etc/passwd")
				_, _, err := addLayer(t, []AddFile{{Src: filepath.Join(group, tt.src), Dst: "/dst"}}, group)
				if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "add "+filepath.Join(group, tt.src)+": ") {
					t.Fatalf("add: %v; want add %s: ... %s", err, filepath.Join(group, tt.src), tt.want)
				}
			})
		}
	}
}

// TestAddWithoutContext: without a context (a caller's own paths), a source is taken at its
// target wherever it is, and the layer of a group directory's sources is the one the context
// gives.
func TestAddWithoutContext(t *testing.T) {
	group, outside := outsideTree(t)
	link(t, filepath.Join(outside, "motd"), group, "leak")
	link(t, "rootfs", group, "tree")
	if err := os.Link(filepath.Join(group, "rootfs", "etc", "motd"), filepath.Join(group, "motd")); err != nil {
		t.Fatal(err)
	}
	files := []AddFile{
		{Src: filepath.Join(group, "tree"), Dst: "/srv"},
		{Src: filepath.Join(group, "motd"), Dst: "/etc/motd"}, // a hard link of srv/etc/motd
		{Src: filepath.Join(group, "rootfs", "etc", "hostname"), Dst: "/etc/hostname"},
		{Src: filepath.Join(group, "rootfs", "etc", "motd"), Dst: "/srv/etc/hostname"}, // the later wins
	}
	want, _, err := addLayer(t, files, group)
	if err != nil {
		t.Fatal(err)
	}
	got, _, err := addLayer(t, files, "")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("without a context (-with +without):\n%s", diff)
	}
	wantEntries := []imagetest.Entry{
		{Name: "etc/hostname", Type: tar.TypeReg, Mode: 0o644, Size: 4},
		{Name: "etc/motd", Type: tar.TypeReg, Mode: 0o644, Size: 7},
		{Name: "srv/", Type: tar.TypeDir, Mode: 0o755},
		{Name: "srv/etc/", Type: tar.TypeDir, Mode: 0o755},
		{Name: "srv/etc/hostname", Type: tar.TypeLink, Mode: 0o644, Link: "etc/motd"},
		{Name: "srv/etc/motd", Type: tar.TypeLink, Mode: 0o644, Link: "etc/motd"},
	}
	if diff := cmp.Diff(wantEntries, want); diff != "" {
		t.Errorf("layer entries (-want +got):\n%s", diff)
	}
	_, content, err := addLayer(t, []AddFile{{Src: filepath.Join(group, "leak"), Dst: "/leak"}}, "")
	if err != nil || content["leak"] != "SECRET\n" {
		t.Errorf("a caller's own link, without a context: %q, %v; want its target's content", content["leak"], err)
	}
}

// link makes the link dir/name to target.
func link(t *testing.T, target, dir, name string) {
	t.Helper()
	if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
		t.Fatal(err)
	}
}

// TestSwappedForFIFO: a file swapped for a FIFO after its lstat fails the build at once; a
// blocking open would wait for a writer that never comes.
func TestSwappedForFIFO(t *testing.T) {
	for _, tt := range []struct{ name, src string }{
		{"file source", "rootfs/etc/motd"},
		{"file of a directory source", "rootfs"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			group, _ := outsideTree(t)
			entry := filepath.Join(group, "rootfs", "etc", "motd")
			var once sync.Once
			noReadOf(t, func(p string) {
				if p == entry {
					once.Do(func() {
						if err := os.Remove(p); err != nil {
							t.Error(err)
						}
						if err := syscall.Mkfifo(p, 0o644); err != nil {
							t.Error(err)
						}
					})
				}
			})
			done := make(chan error, 1)
			go func() {
				_, _, err := addLayer(t, []AddFile{{Src: filepath.Join(group, tt.src), Dst: "/dst"}}, group)
				done <- err
			}()
			select {
			case err := <-done:
				if err == nil || !strings.Contains(err.Error(), "replaced while read") {
					t.Fatalf("add: %v; want ... replaced while read", err)
				}
			case <-time.After(time.Minute):
				t.Fatal("add: still waiting a minute after its source became a FIFO")
			}
		})
	}
}
