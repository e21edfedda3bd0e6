package state

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func fileOpener(t *testing.T) newBackendFunc {
	dir := t.TempDir()
	return func(t testing.TB, group string) Backend {
		b, err := Open(context.Background(), "file://"+filepath.Join(dir, group+".json"), group, nil)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
}

func TestFileBackend(t *testing.T) { testBackend(t, fileOpener(t), caps{cas: true, knowsUnlock: true}) }

func TestFileRelativeURL(t *testing.T) {
	t.Chdir(t.TempDir())
	ctx := context.Background()
	b, err := Open(ctx, "file://.slipway/state/x.json", "x", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Write(ctx, &Document{}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(".slipway/state/x.json"); err != nil {
		t.Fatalf("state not at the relative path: %v", err)
	}
	if _, err := os.Stat(".slipway/state/x.json.lock"); err == nil {
		t.Fatal("a write left a lock file")
	}
	if b.Location() != "file://.slipway/state/x.json" {
		t.Fatalf("Location = %q", b.Location())
	}
	for _, g := range []string{"y", "z"} {
		bg, err := Open(ctx, "file://", g, nil) // empty path: the default
		if err != nil {
			t.Fatal(err)
		}
		if err := bg.Write(ctx, &Document{}); err != nil {
			t.Fatal(err)
		}
		if _, err := bg.Lock(ctx, NewInfo("apply")); err != nil { // a lock file is no group
			t.Fatal(err)
		}
	}
	l, err := Open(ctx, "file://.slipway/state", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	groups, err := l.(Lister).List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(groups, ",") != "x,y,z" {
		t.Fatalf("List = %v; want x, y, z", groups)
	}
}

func TestOpenErrors(t *testing.T) {
	for _, u := range []string{"nothing", "s3://bucket", "kubernetes://", "kubernetes://ns"} {
		if _, err := Open(context.Background(), u, "g", nil); err == nil {
			t.Errorf("Open(%q) succeeded", u)
		}
	}
	_, err := Open(context.Background(), "ftp://user:hunter2@host/x", "g", nil)
	if err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("Open error %v; want one without the password", err)
	}
}

// BenchmarkFile1000Nodes writes and reads back a 1,000-node state with the file backend
// (issue 5: under 100 ms).
func BenchmarkFile1000Nodes(b *testing.B) {
	ctx := context.Background()
	be, err := Open(ctx, "file://"+filepath.Join(b.TempDir(), "big.json"), "big", nil)
	if err != nil {
		b.Fatal(err)
	}
	d := bigDocument("big", 1000)
	read := func(b *testing.B) {
		got, err := be.Read(ctx)
		if err != nil || len(got.Nodes) != 1000 {
			b.Fatal(err)
		}
	}
	write := func(b *testing.B) {
		if err := be.Write(ctx, d); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("write+read", func(b *testing.B) {
		for b.Loop() {
			write(b)
			read(b)
		}
	})
	b.Run("write", func(b *testing.B) {
		for b.Loop() {
			write(b)
		}
	})
	b.Run("read", func(b *testing.B) {
		for b.Loop() {
			read(b)
		}
	})
}

func BenchmarkEncodeGzip1000Nodes(b *testing.B) {
	d := bigDocument("big", 1000)
	for b.Loop() {
		if _, err := EncodeGzip(d); err != nil {
			b.Fatal(err)
		}
	}
}
