package image

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// tarWriter writes normalised entries: root-owned, no user or group names, one fixed time.
type tarWriter struct {
	tw    *tar.Writer
	epoch time.Time
	links map[fileID]string // first entry of each multiply-linked file
}

// file is where an entry's content is read: the path rel in the tree in, through which no
// link, not even one swapped in during the build, leads out of it; or, without in, the path p.
// p names the file in messages either way.
type file struct {
	in     *os.Root
	rel, p string
	follow bool // the entry is the link's target, not the link: an add source named by a link
}

// info describes f as its entry is written.
func (f file) info() (fs.FileInfo, error) {
	switch {
	case f.in == nil:
		return os.Lstat(f.p)
	case f.follow:
		return f.in.Stat(f.rel)
	}
	return f.in.Lstat(f.rel)
}

// copyBuffers are the file copy buffers of tar writers, pooled for the same reason as
// hashBuffers: one of its own per node made a 1,000-node plan allocate 256 MB.
var copyBuffers = sync.Pool{New: func() any { b := make([]byte, 64<<10); return &b }}

type fileID struct{ dev, ino uint64 }

// readFlags open a file for its content without waiting: a regular file swapped for a FIFO
// after its lstat would otherwise block the build until something writes to it (the open
// then returns at once and sameFile refuses the FIFO). O_NONBLOCK does not change reads of a
// regular file.
const readFlags = os.O_RDONLY | syscall.O_NONBLOCK

// openFile opens a file whose content goes into a layer. Tests count the reads.
var openFile = func(f file) (*os.File, error) {
	if f.in != nil {
		return f.in.OpenFile(f.rel, readFlags, 0)
	}
	return os.OpenFile(f.p, readFlags, 0)
}

func newTarWriter(w io.Writer, epoch time.Time) *tarWriter {
	return &tarWriter{tw: tar.NewWriter(w), epoch: epoch, links: map[fileID]string{}}
}

// add writes the entry name for the file src, described by fi (src.info()). It returns a
// warning instead of an entry for sockets and device files, which have no place in an image:
// the container runtime provides /dev, and a socket belongs to a running process.
func (t *tarWriter) add(name string, src file, fi fs.FileInfo) (warning string, err error) {
	p := src.p
	mode := fi.Mode()
	hdr := &tar.Header{
		Name:    name,
		Mode:    int64(mode.Perm()),
		ModTime: t.epoch,
		Format:  tar.FormatPAX,
	}
	if mode&fs.ModeSetuid != 0 {
		hdr.Mode |= 0o4000
	}
	if mode&fs.ModeSetgid != 0 {
		hdr.Mode |= 0o2000
	}
	if mode&fs.ModeSticky != 0 {
		hdr.Mode |= 0o1000
	}
	switch {
	case mode.IsDir():
		hdr.Typeflag = tar.TypeDir
		hdr.Name += "/"
	case mode&fs.ModeSymlink != 0:
		hdr.Typeflag = tar.TypeSymlink
		if src.in != nil {
			hdr.Linkname, err = src.in.Readlink(src.rel)
		} else {
			hdr.Linkname, err = os.Readlink(p)
		}
		if err != nil {
			return "", err
		}
	case mode&fs.ModeNamedPipe != 0:
		hdr.Typeflag = tar.TypeFifo
	case mode.IsRegular():
		hdr.Typeflag = tar.TypeReg
		hdr.Size = fi.Size()
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Nlink > 1 {
			id := fileID{uint64(st.Dev), uint64(st.Ino)}
			if first, seen := t.links[id]; seen {
				hdr.Typeflag, hdr.Linkname, hdr.Size = tar.TypeLink, first, 0
			} else {
				t.links[id] = name
			}
		}
	case mode&fs.ModeSocket != 0:
		return p + ": socket skipped", nil
	case mode&fs.ModeDevice != 0:
		return p + ": device file skipped", nil
	default:
		return p + ": irregular file skipped", nil
	}
	if err := t.tw.WriteHeader(hdr); err != nil {
		return "", err
	}
	if hdr.Typeflag != tar.TypeReg {
		return "", nil
	}
	f, err := openFile(src)
	if err != nil {
		return "", err
	}
	defer f.Close()
	if err := sameFile(f, fi); err != nil {
		return "", fmt.Errorf("%s: %w", p, err)
	}
	buf := copyBuffers.Get().(*[]byte)
	defer copyBuffers.Put(buf)
	n, err := io.CopyBuffer(t.tw, io.LimitReader(f, hdr.Size), *buf)
	if err != nil {
		return "", err
	}
	if n != hdr.Size {
		return "", fmt.Errorf("%s: file shrank while read (%d of %d bytes)", p, n, hdr.Size)
	}
	return "", nil
}

func (t *tarWriter) close() error { return t.tw.Close() }

// rootfsTar writes the tree that open gives, the directory root, as a tar stream. fs.WalkDir
// visits the entries of each directory in lexical order, which puts every directory before its
// content and makes the order independent of the file system's own. The tree is read through
// its os.Root: a link in it goes into the layer as a link and is never followed.
func rootfsTar(root string, open func() (*os.Root, error), epoch time.Time) tarSource {
	return func(w io.Writer) ([]string, error) {
		in, err := open()
		if err != nil {
			return nil, fmt.Errorf("rootfs %s: %w", root, err)
		}
		defer in.Close()
		var warnings []string
		t := newTarWriter(w, epoch)
		err = fs.WalkDir(in.FS(), ".", func(rel string, d fs.DirEntry, err error) error {
			if err != nil || rel == "." {
				return err
			}
			fi, err := d.Info()
			if err != nil {
				return err
			}
			warn, err := t.add(rel, file{in: in, rel: rel, p: filepath.Join(root, rel)}, fi)
			if warn != "" {
				warnings = append(warnings, warn)
			}
			return err
		})
		if err == nil {
			err = t.close()
		}
		if err != nil {
			return warnings, fmt.Errorf("rootfs %s: %w", root, err)
		}
		return warnings, nil
	}
}

// openDir opens the tree at root, with no limit but root itself.
func openDir(root string) func() (*os.Root, error) {
	return func() (*os.Root, error) { return os.OpenRoot(root) }
}

// sameFile fails when f, just opened, is not the file fi described when its header was
// written: it was replaced in between, and its content is not that entry's. Device and inode
// alone do not tell: a file removed and made again at once often gets its inode back, so the
// type and the ctime must match too.
func sameFile(f *os.File, fi fs.FileInfo) error {
	got, err := f.Stat()
	if err != nil {
		return err
	}
	if !os.SameFile(got, fi) || got.Mode().Type() != fi.Mode().Type() || ctime(got) != ctime(fi) {
		return errors.New("replaced while read")
	}
	return nil
}

func ctime(fi fs.FileInfo) int64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Ctim.Nano()
	}
	return 0
}
