package state_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"

	"slipway.dev/slipway/internal/state"
	"slipway.dev/slipway/internal/state/statetest"
)

func TestDecode(t *testing.T) {
	tests := []struct {
		name, in, wantErr string
		newer             bool
	}{
		{name: "ok", in: `{"version":1,"lineage":"l","serial":3,"group":"g"}`},
		{name: "newer", in: `{"version":2,"serial":3}`, wantErr: "upgrade slipway", newer: true},
		{name: "no version", in: `{"serial":3}`, wantErr: "not a slipway state"},
		{name: "garbage", in: `{"version":1,`, wantErr: "parse"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := state.Decode("here", []byte(tt.in))
			if tt.wantErr == "" {
				if err != nil || d.Serial != 3 {
					t.Fatalf("Decode = %v, %v", d, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Decode error = %v; want one containing %q", err, tt.wantErr)
			}
			var ve *state.VersionError
			if errors.As(err, &ve) != tt.newer {
				t.Fatalf("VersionError = %v; want %v", errors.As(err, &ve), tt.newer)
			}
		})
	}
}

func TestLockErrorMessage(t *testing.T) {
	e := &state.LockError{Group: "hello", Holder: state.Info{ID: "abc", Who: "alice@host", Operation: "apply", PID: 1234,
		Created: time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)}}
	want := "state hello is locked by alice@host (apply, pid 1234) since 2026-07-01T12:00:00Z, lock ID abc"
	if got := e.Error(); got != want {
		t.Fatalf("LockError = %q; want %q", got, want)
	}
}

// TestLockHolderQuoted: a lock's fields are whoever wrote the lock's (a state server, another
// party): escape codes in them are quoted (issue 35, item 8).
func TestLockHolderQuoted(t *testing.T) {
	e := &state.LockError{Group: "hello", Holder: state.Info{ID: "a\nb", Who: "x\x1b[2K\rNo changes.", Operation: "apply\x1b[1A"}}
	want := `state hello is locked by x\x1b[2K\rNo changes. (apply\x1b[1A), lock ID a\nb`
	if got := e.Error(); got != want {
		t.Fatalf("LockError = %q; want %q", got, want)
	}
}

// TestSecretSize1000Nodes: a 1,000-node state, gzip-compressed, stays well under the 1 MiB a
// Secret can hold.
func TestSecretSize1000Nodes(t *testing.T) {
	d := statetest.BigDocument("big", 1000)
	d.Version, d.Lineage, d.Serial = state.CurrentVersion, uuid.NewString(), 1
	raw, err := state.Encode(d)
	if err != nil {
		t.Fatal(err)
	}
	gz, err := state.EncodeGzip(d)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("1,000 nodes × 2 roles: %d bytes JSON, %d bytes gzip (limit %d)", len(raw), len(gz), state.MaxSecretState)
	if len(gz) > state.MaxSecretState/2 {
		t.Fatalf("compressed state %d bytes; want well under %d", len(gz), state.MaxSecretState)
	}
	back, err := state.Gunzip(gz)
	if err != nil {
		t.Fatal(err)
	}
	got, err := state.Decode("gz", back)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(d, got); diff != "" {
		t.Fatalf("round trip (-want +got):\n%s", diff)
	}
}
