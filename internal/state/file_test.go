package state_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"slipway.dev/slipway/internal/state"
	"slipway.dev/slipway/internal/state/statetest"
)

func fileOpener(t *testing.T) statetest.Opener {
	dir := t.TempDir()
	return func(t testing.TB, group string) state.Backend {
		b, err := state.Open(context.Background(), "file://"+filepath.Join(dir, group+".json"), group, nil)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
}

func TestFileBackend(t *testing.T) {
	statetest.Conformance(t, fileOpener(t), statetest.Caps{CAS: true, KnowsUnlock: true})
}

func TestFileRelativeURL(t *testing.T) {
	t.Chdir(t.TempDir())
	ctx := context.Background()
	b, err := state.Open(ctx, "file://.slipway/state/x.json", "x", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Write(ctx, &state.Document{}); err != nil {
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
		bg, err := state.Open(ctx, "file://", g, nil) // empty path: the default
		if err != nil {
			t.Fatal(err)
		}
		if err := bg.Write(ctx, &state.Document{}); err != nil {
			t.Fatal(err)
		}
		if _, err := bg.Lock(ctx, state.NewInfo("apply")); err != nil { // a lock file is no group
			t.Fatal(err)
		}
	}
	l, err := state.Open(ctx, "file://.slipway/state", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	groups, err := l.(state.Lister).List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(groups, ",") != "x,y,z" {
		t.Fatalf("List = %v; want x, y, z", groups)
	}
}

func TestOpenErrors(t *testing.T) {
	for _, u := range []string{"nothing", "s3://bucket", "kubernetes://", "kubernetes://ns"} {
		if _, err := state.Open(context.Background(), u, "g", nil); err == nil {
			t.Errorf("Open(%q) succeeded", u)
		}
	}
	_, err := state.Open(context.Background(), "ftp://user:hunter2@host/x", "g", nil)
	if err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("Open error %v; want one without the password", err)
	}
}

// BenchmarkFile1000Nodes writes and reads back a 1,000-node state with the file backend
// (issue 5: under 100 ms).
func BenchmarkFile1000Nodes(b *testing.B) {
	ctx := context.Background()
	be, err := state.Open(ctx, "file://"+filepath.Join(b.TempDir(), "big.json"), "big", nil)
	if err != nil {
		b.Fatal(err)
	}
	d := statetest.BigDocument("big", 1000)
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
	d := statetest.BigDocument("big", 1000)
	for b.Loop() {
		if _, err := state.EncodeGzip(d); err != nil {
			b.Fatal(err)
		}
	}
}
