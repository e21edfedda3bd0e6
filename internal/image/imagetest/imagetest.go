// Package imagetest is test support for image and for e2e/image: a small rootfs with every
// kind of entry slipway keeps, and the tar entries of an image's layer, compared as a table.
// It imports no slipway package, so image's own tests use it too.
package imagetest

import (
	"archive/tar"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// WriteTree makes a small rootfs under root with every kind of entry slipway keeps: files of
// several modes (setuid among them), a sticky directory, a symlink and a hard link.
func WriteTree(t testing.TB, root string) {
	t.Helper()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(root, "etc", "systemd"), 0o755))
	must(os.MkdirAll(filepath.Join(root, "sbin"), 0o755))
	must(os.MkdirAll(filepath.Join(root, "tmp"), 0o755))
	must(os.Chmod(filepath.Join(root, "tmp"), 0o777|fs.ModeSticky))
	must(os.WriteFile(filepath.Join(root, "etc", "hostname"), []byte("web\n"), 0o644))
	must(os.WriteFile(filepath.Join(root, "etc", "shadow"), []byte("root:*:1::::::\n"), 0o600))
	must(os.WriteFile(filepath.Join(root, "sbin", "init"), []byte("#!/bin/sh\nexec sleep inf\n"), 0o755))
	must(os.Chmod(filepath.Join(root, "sbin", "init"), 0o755|fs.ModeSetuid))
	must(os.Symlink("../sbin/init", filepath.Join(root, "etc", "systemd", "init")))
	must(os.Link(filepath.Join(root, "sbin", "init"), filepath.Join(root, "sbin", "init-hard")))
}

// Entry is what a test compares of one tar entry: Uname holds the user and group names
// joined, ModTime the Unix seconds.
type Entry struct {
	Name     string
	Type     byte
	Mode     int64
	Link     string
	Size     int64
	Uid, Gid int
	Uname    string
	ModTime  int64
}

// Entries lists the tar entries of the image's only (or last) layer.
func Entries(t testing.TB, img v1.Image) []Entry {
	t.Helper()
	ls, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	if len(ls) == 0 {
		t.Fatal("the image has no layer")
	}
	rc, err := ls[len(ls)-1].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	out, _ := ReadTar(t, rc)
	return out
}

// ReadTar lists the entries of the tar stream r and the content of each regular file, by name.
func ReadTar(t testing.TB, r io.Reader) ([]Entry, map[string]string) {
	t.Helper()
	var out []Entry
	content := map[string]string{}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out, content
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, Entry{h.Name, h.Typeflag, h.Mode, h.Linkname, h.Size, h.Uid, h.Gid, h.Uname + h.Gname, h.ModTime.Unix()})
		if h.Typeflag == tar.TypeReg {
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			content[h.Name] = string(b)
		}
	}
}
