package image

import (
	"archive/tar"
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"sync"
	"syscall"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/klauspost/compress/gzip"
)

// compressionLevel trades a little size for speed: a registry on the same machine or LAN is
// faster than the compressor, and the level is part of what makes builds byte-identical.
const compressionLevel = gzip.BestSpeed

// tarSource writes the uncompressed tar stream of a layer. It is called once to learn the
// layer's DiffID and, only when the layer is needed compressed, a second time.
type tarSource func(w io.Writer) (warnings []string, err error)

// lazyLayer is a layer whose DiffID is known from a first, hashing-only pass, and whose
// compressed form is made on first use into an unlinked temporary file. An unchanged node
// thus costs one read of its files and no compression: its tag is found in the registry.
type lazyLayer struct {
	what   string // names the layer in errors, e.g. "rootfs /srv/web"
	src    tarSource
	diffID v1.Hash

	tarSize int64 // of the tar stream; 0 when not known

	once   sync.Once
	file   *os.File // unlinked; closed by its finalizer once the layer is unreachable
	digest v1.Hash
	size   int64
	err    error
}

var _ v1.Layer = (*lazyLayer)(nil)

// hashBuffers are the buffers of hashing passes: a group of many small nodes would otherwise
// allocate (and clear) a megabyte per node on every plan.
//
// 64 KiB, not more: a plan hashes 32 trees at a time, and at 1 MiB each the buffers alone
// were a fifth of a 1,000-node plan's peak memory (issue 17); sha256 is no faster with more.
var hashBuffers = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, 64<<10) }}

// newLazyLayer runs the hashing pass of src and returns the layer and the warnings of src.
// Cancelling ctx stops the pass.
func newLazyLayer(ctx context.Context, what string, src tarSource) (*lazyLayer, []string, error) {
	h := sha256.New()
	bw := hashBuffers.Get().(*bufio.Writer)
	cw := &countWriter{w: ctxWriter{ctx, h}}
	bw.Reset(cw)
	warnings, err := src(bw)
	if err == nil {
		err = bw.Flush()
	}
	bw.Reset(nil)
	hashBuffers.Put(bw)
	if err != nil {
		return nil, warnings, err
	}
	return &lazyLayer{what: what, src: src, diffID: hashOf(h), tarSize: cw.n}, warnings, nil
}

// countWriter counts what passes through it.
type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// compressBufferSize is the size of each buffer of a layer's compression: the tar stream's
// size up to 1 MiB. A 1,000-node first apply compresses 1,000 layers of a few hundred bytes,
// 200 at a time; two fixed 1 MiB buffers each were 2 GB of its allocation (issue 17).
func compressBufferSize(tarSize int64) int {
	return int(min(max(tarSize, 4<<10), 1<<20))
}

// gzipWriters are compressors at compressionLevel, reused: each holds about half a megabyte
// of tables that a tiny layer would otherwise allocate anew.
var gzipWriters = sync.Pool{New: func() any {
	zw, _ := gzip.NewWriterLevel(nil, compressionLevel)
	return zw
}}

// ctxWriter fails writes once ctx is done, so a long pass over a tree can be interrupted.
type ctxWriter struct {
	ctx context.Context
	w   io.Writer
}

func (c ctxWriter) Write(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.w.Write(p)
}

func hashOf(h hash.Hash) v1.Hash {
	return v1.Hash{Algorithm: "sha256", Hex: hex.EncodeToString(h.Sum(nil))}
}

// compress writes the gzip form to a temporary file. The tar stream is produced in one
// goroutine and compressed in another, so the two cores share the work.
func (l *lazyLayer) compress() error {
	l.once.Do(func() {
		f, err := os.CreateTemp("", "slipway-layer-*")
		if err != nil {
			l.err = fmt.Errorf("%s: temporary file: %w", l.what, err)
			return
		}
		// Unlinked at once: nothing is left behind whatever happens to the process.
		_ = os.Remove(f.Name())

		pr, pw := io.Pipe()
		diff := sha256.New()
		size := l.tarSize
		if size == 0 {
			size = 1 << 20
		}
		go func() {
			bw := bufio.NewWriterSize(io.MultiWriter(pw, diff), compressBufferSize(size))
			_, err := l.src(bw)
			if err == nil {
				err = bw.Flush()
			}
			pw.CloseWithError(err)
		}()
		sum := sha256.New()
		fw := bufio.NewWriterSize(f, compressBufferSize(size))
		zw := gzipWriters.Get().(*gzip.Writer)
		zw.Reset(io.MultiWriter(fw, sum))
		buf := copyBuffers.Get().(*[]byte)
		_, err = io.CopyBuffer(zw, pr, *buf)
		copyBuffers.Put(buf)
		if err == nil {
			err = zw.Close()
		}
		zw.Reset(nil)
		gzipWriters.Put(zw)
		if err == nil {
			err = fw.Flush()
		}
		_ = pr.Close()
		if err != nil {
			f.Close()
			l.err = fmt.Errorf("%s: compress: %w", l.what, err)
			return
		}
		if got := hashOf(diff); got != l.diffID {
			f.Close()
			l.err = fmt.Errorf("%s: changed during the build (content digest %s, then %s)", l.what, l.diffID, got)
			return
		}
		st, err := f.Stat()
		if err != nil {
			f.Close()
			l.err = fmt.Errorf("%s: %w", l.what, err)
			return
		}
		l.file, l.digest, l.size = f, hashOf(sum), st.Size()
	})
	return l.err
}

func (l *lazyLayer) Digest() (v1.Hash, error) {
	if err := l.compress(); err != nil {
		return v1.Hash{}, err
	}
	return l.digest, nil
}

func (l *lazyLayer) DiffID() (v1.Hash, error) { return l.diffID, nil }

func (l *lazyLayer) Compressed() (io.ReadCloser, error) {
	if err := l.compress(); err != nil {
		return nil, err
	}
	return io.NopCloser(io.NewSectionReader(l.file, 0, l.size)), nil
}

func (l *lazyLayer) Uncompressed() (io.ReadCloser, error) {
	rc, err := l.Compressed()
	if err != nil {
		return nil, err
	}
	zr, err := gzip.NewReader(rc)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", l.what, err)
	}
	return zr, nil
}

func (l *lazyLayer) Size() (int64, error) {
	if err := l.compress(); err != nil {
		return 0, err
	}
	return l.size, nil
}

func (l *lazyLayer) MediaType() (types.MediaType, error) { return types.OCILayer, nil }

// tarWriter writes normalised entries: root-owned, no user or group names, one fixed time.
type tarWriter struct {
	tw    *tar.Writer
	epoch time.Time
	links map[fileID]string // first entry of each multiply-linked file
}

// copyBuffers are the file copy buffers of tar writers, pooled for the same reason as
// hashBuffers: one of its own per node made a 1,000-node plan allocate 256 MB.
var copyBuffers = sync.Pool{New: func() any { b := make([]byte, 64<<10); return &b }}

type fileID struct{ dev, ino uint64 }

// openFile opens a file whose content goes into a layer; tests count the reads.
var openFile = os.Open

func newTarWriter(w io.Writer, epoch time.Time) *tarWriter {
	return &tarWriter{tw: tar.NewWriter(w), epoch: epoch, links: map[fileID]string{}}
}

// add writes the entry name for the file at p, described by fi (from Lstat). It returns a
// warning instead of an entry for sockets and device files, which have no place in an image:
// the container runtime provides /dev, and a socket belongs to a running process.
func (t *tarWriter) add(name, p string, fi fs.FileInfo) (warning string, err error) {
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
		if hdr.Linkname, err = os.Readlink(p); err != nil {
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
	f, err := openFile(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
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

// rootfsTar writes the directory root as a tar stream. filepath.WalkDir visits the entries of
// each directory in lexical order, which puts every directory before its content and makes the
// order independent of the file system's own.
func rootfsTar(root string, epoch time.Time) tarSource {
	return func(w io.Writer) ([]string, error) {
		var warnings []string
		t := newTarWriter(w, epoch)
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if p == root {
				return nil
			}
			fi, err := d.Info()
			if err != nil {
				return err
			}
			rel, err := filepath.Rel(root, p)
			if err != nil {
				return err
			}
			warn, err := t.add(filepath.ToSlash(rel), p, fi)
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
