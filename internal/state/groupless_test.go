package state_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"slipway.dev/slipway/internal/state"
)

// A backend opened without a group refuses to read, write, delete and lock, whichever it is;
// the file and Kubernetes backends still list.
func TestOpenedWithoutGroup(t *testing.T) {
	ctx := context.Background()
	for _, tt := range []struct {
		name   string
		url    string
		lister bool
	}{
		{"file", "file://" + filepath.Join(t.TempDir(), "state"), true},
		{"kubernetes", "kubernetes://ns", true},
		{"http", "http://127.0.0.1:1/state", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b, err := state.Open(ctx, tt.url, "", newFakeKube())
			if err != nil {
				t.Fatal(err)
			}
			_, rerr := b.Read(ctx)
			_, lerr := b.Lock(ctx, state.Info{})
			_, ierr := b.LockInfo(ctx)
			for verb, err := range map[string]error{"read": rerr, "write": b.Write(ctx, &state.Document{}),
				"delete": b.Delete(ctx), "lock": lerr, "unlock": b.Unlock(ctx, "x"), "lock info": ierr} {
				if !errors.Is(err, state.ErrNoGroup) {
					t.Errorf("%s: %v; want ErrNoGroup", verb, err)
				}
			}
			if _, ok := b.(state.Lister); ok != tt.lister {
				t.Errorf("a Lister: %v, want %v", ok, tt.lister)
			}
		})
	}
}
