package image

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"sync"
	"syscall"
	"time"
)

// tarWriter writes normalised entries: root-owned, no user or group names, one fixed time.
type tarWriter struct {
	tw    *tar.Writer
	epoch time.Time
	links map[fileID]string // first entry of each multiply-linked file
	// in, when set, is the tree the entries are read from, an entry's name being its path in
	// it: no link, not even one swapped in during the walk, leads a read out of it.
	in *os.Root
}

// copyBuffers are the file copy buffers of tar writers, pooled for the same reason as
// hashBuffers: one of its own per node made a 1,000-node plan allocate 256 MB.
var copyBuffers = sync.Pool{New: func() any { b := make([]byte, 64<<10); return &b }}

type fileID struct{ dev, ino uint64 }

// openFile opens a file whose content goes into a layer: the entry name of in, or else the
// path p. Tests count the reads.
var openFile = func(in *os.Root, name, p string) (*os.File, error) {
	if in != nil {
		return in.Open(name)
	}
	return os.Open(p)
}

func newTarWriter(w io.Writer, epoch time.Time) *tarWriter {
	return &tarWriter{tw: tar.NewWriter(w), epoch: epoch, links: map[fileID]string{}}
}

// add writes the entry name for the file at p, described by fi (from Lstat). It returns a
// warning instead of an entry for sockets and device files, which have no place in an image:
// the container runtime provides /dev, and a socket belongs to a running process.
func (t *tarWriter) add(name, p string, fi fs.FileInfo) (warning string, err error) {
	rel := name
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
		if t.in != nil {
			hdr.Linkname, err = t.in.Readlink(rel)
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
	f, err := openFile(t.in, rel, p)
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
		t.in = in
		err = fs.WalkDir(in.FS(), ".", func(rel string, d fs.DirEntry, err error) error {
			if err != nil || rel == "." {
				return err
			}
			fi, err := d.Info()
			if err != nil {
				return err
			}
			warn, err := t.add(rel, filepath.Join(root, rel), fi)
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
// written: it was replaced in between, and its content is not that entry's.
func sameFile(f *os.File, fi fs.FileInfo) error {
	got, err := f.Stat()
	if err != nil {
		return err
	}
	if !os.SameFile(got, fi) {
		return errors.New("replaced while read")
	}
	return nil
}

// addTar writes the added files as a tar stream, each at its destination; a directory source
// is added with its whole content. Parent directories of a destination are not written, so
// the base image's own directories keep their modes and owners.
func addTar(files []AddFile, epoch time.Time) tarSource {
	return func(w io.Writer) ([]string, error) {
		type entry struct{ name, path string }
		var entries []entry
		seen := map[string]bool{}
		for _, f := range files {
			dst := path.Clean("/" + f.Dst)[1:]
			if dst == "" {
				return nil, fmt.Errorf("add %s: destination %q is the root", f.Src, f.Dst)
			}
			// The source itself is taken at its target, as `COPY` does; links inside a
			// directory source stay links.
			top, err := filepath.EvalSymlinks(f.Src)
			if err != nil {
				return nil, fmt.Errorf("add %s: %w", f.Src, err)
			}
			err = filepath.WalkDir(top, func(p string, d fs.DirEntry, err error) error {
				if err != nil {
					return err
				}
				rel, err := filepath.Rel(top, p)
				if err != nil {
					return err
				}
				name := path.Join(dst, filepath.ToSlash(rel))
				if !seen[name] { // a later `add` of the same destination wins
					seen[name] = true
					entries = append(entries, entry{name, p})
				} else {
					for i := range entries {
						if entries[i].name == name {
							entries[i].path = p
						}
					}
				}
				return nil
			})
			if err != nil {
				return nil, fmt.Errorf("add %s: %w", f.Src, err)
			}
		}
		// Sorted by destination, so parents come before children and `add` order does not
		// change the layer.
		sort.Slice(entries, func(i, j int) bool { return entries[i].name < entries[j].name })
		var warnings []string
		t := newTarWriter(w, epoch)
		for _, e := range entries {
			fi, err := os.Lstat(e.path)
			if err != nil {
				return warnings, fmt.Errorf("add %s: %w", e.path, err)
			}
			warn, err := t.add(e.name, e.path, fi)
			if err != nil {
				return warnings, fmt.Errorf("add %s: %w", e.path, err)
			}
			if warn != "" {
				warnings = append(warnings, warn)
			}
		}
		if err := t.close(); err != nil {
			return warnings, fmt.Errorf("add: %w", err)
		}
		return warnings, nil
	}
}
