package image

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"os"
	"sync"

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
