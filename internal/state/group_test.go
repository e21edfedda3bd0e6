package state_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"slipway.dev/slipway/internal/state"
	"slipway.dev/slipway/internal/state/statetest"
)

// TestForeignGroupDocument: a state location that holds another group's document is refused
// when read and when written, naming both groups (issue 11 item 6).
func TestForeignGroupDocument(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	alpha, err := state.Open(ctx, "file://"+filepath.Join(dir, "alpha.json"), "alpha", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := alpha.Write(ctx, statetest.BigDocument("alpha", 1)); err != nil {
		t.Fatal(err)
	}
	// beta pointed at alpha's file, as `--state file://alpha.json` run in beta's directory does.
	beta, err := state.Open(ctx, "file://"+filepath.Join(dir, "alpha.json"), "beta", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		run  func() error
	}{
		{"read", func() error { _, err := beta.Read(ctx); return err }},
		{"write new", func() error { return beta.Write(ctx, &state.Document{}) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.run()
			if err == nil {
				t.Fatal("beta used alpha's document without complaint")
			}
			if !strings.Contains(err.Error(), "alpha") || !strings.Contains(err.Error(), "beta") {
				t.Errorf("error %q: want it to name both groups", err)
			}
		})
	}
	var ge *state.GroupError
	if _, err := beta.Read(ctx); !errors.As(err, &ge) || ge.Got != "alpha" || ge.Want != "beta" {
		t.Errorf("Read = %v; want a GroupError got alpha want beta", err)
	}
	// alpha's document is untouched.
	b, err := os.ReadFile(filepath.Join(dir, "alpha.json"))
	if err != nil {
		t.Fatal(err)
	}
	if d, err := state.Decode("alpha.json", b); err != nil || d.Group != "alpha" || d.Serial != 1 {
		t.Errorf("alpha's document after beta's attempts: %+v, %v", d, err)
	}
}
