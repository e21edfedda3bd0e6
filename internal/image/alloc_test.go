package image

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

// A plan of N unchanged nodes runs N hashing passes; each must cost about the size of the
// tree, not a fixed large buffer (issue 17: 256 KiB per node made a 1,000-node plan allocate
// a quarter of a gigabyte).
func TestHashingPassAllocatesLittle(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"etc/hostname", "etc/bench"} {
		if err := os.WriteFile(filepath.Join(root, f), []byte("n001 tiny\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	epoch := time.Unix(0, 0)
	pass := func() {
		if _, _, err := newLazyLayer(ctx, "rootfs", rootfsTar(root, openDir(root), epoch)); err != nil {
			t.Fatal(err)
		}
	}
	pass() // fills the pools
	const passes = 50
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range passes {
		pass()
	}
	runtime.ReadMemStats(&after)
	perPass := (after.TotalAlloc - before.TotalAlloc) / passes
	if limit := uint64(64 << 10); perPass > limit {
		t.Errorf("a hashing pass of a 2-file rootfs allocates %d bytes, want at most %d", perPass, limit)
	}
}

// A plan hashes 32 trees at a time, each pass holding a pooled buffer: their size is part of
// a plan's peak memory, 32 MiB at 1 MiB each (issue 17). The copy buffers likewise.
func TestHashingBuffersAreSmall(t *testing.T) {
	bw := hashBuffers.Get().(*bufio.Writer)
	defer hashBuffers.Put(bw)
	cb := copyBuffers.Get().(*[]byte)
	defer copyBuffers.Put(cb)
	for _, tc := range []struct {
		name string
		size int
	}{{"hashing buffer", bw.Size()}, {"copy buffer", len(*cb)}} {
		if tc.size > 64<<10 {
			t.Errorf("%s of %d bytes, want at most 64 KiB", tc.name, tc.size)
		}
	}
}

// A first apply compresses every new node's layer, 200 at a time: a layer of a few hundred
// bytes must not cost megabytes of buffers and compressor tables (issue 17: two 1 MiB buffers
// and a new compressor per layer were 2.9 GB of a 1,000-image push's allocation).
func TestCompressingTinyLayerAllocatesLittle(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "etc", "hostname"), []byte("n001\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	compress := func() {
		l, _, err := newLazyLayer(ctx, "rootfs", rootfsTar(root, openDir(root), time.Unix(0, 0)))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.Digest(); err != nil {
			t.Fatal(err)
		}
		l.file.Close()
	}
	compress() // fills the pools
	const layers = 20
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range layers {
		compress()
	}
	runtime.ReadMemStats(&after)
	perLayer := (after.TotalAlloc - before.TotalAlloc) / layers
	if limit := uint64(256 << 10); perLayer > limit {
		t.Errorf("compressing a 1-file layer allocates %d bytes, want at most %d", perLayer, limit)
	}
}
