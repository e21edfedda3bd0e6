package central

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"slipway.dev/slipway/internal/engine/enginetest"
	"slipway.dev/slipway/internal/spec"
	"slipway.dev/slipway/internal/state"
)

// TestRecordKeepsTheProtectOfWhatItKeeps: the record apply writes before the lane makes its
// objects. With --keep-claims a protected database or bucket the file dropped is kept, and so
// is its protect in the record (else the next apply without --keep-claims would delete what
// the operator protected); the file decides for what it still has.
func TestRecordKeepsTheProtectOfWhatItKeeps(t *testing.T) {
	file := &spec.Central{DatabaseMount: "database", Connection: "postgresql", KVMount: "secret",
		Databases: []spec.CentralDatabase{{Key: "orders", Protect: true}, {Key: "audit"}, {Key: "new"}},
		S3:        &spec.CentralS3{Buckets: []spec.CentralBucket{{Key: "media"}}}}
	recorded := func(dbs, buckets []string) *state.CentralRecord {
		return &state.CentralRecord{DatabaseMount: "database", Connection: "postgresql", KVMount: "secret",
			Protected: dbs, ProtectedBuckets: buckets}
	}
	for _, tc := range []struct {
		name       string
		have       *state.CentralRecord
		keepClaims bool
		want       *state.CentralRecord
		writes     int
	}{
		{"no record yet", nil, false, recorded([]string{"orders"}, nil), 1},
		{"no record yet, --keep-claims", nil, true, recorded([]string{"orders"}, nil), 1},
		{"the same record: no write", recorded([]string{"orders"}, nil), false, recorded([]string{"orders"}, nil), 0},
		{"the file lifts audit's protect", recorded([]string{"audit", "orders"}, nil), false, recorded([]string{"orders"}, nil), 1},
		{"the file lifts it, --keep-claims does not bring it back", recorded([]string{"audit", "orders"}, []string{"media"}), true, recorded([]string{"orders"}, nil), 1},
		{"dropped ones kept with --keep-claims", recorded([]string{"gone", "orders"}, []string{"photos"}), true, recorded([]string{"gone", "orders"}, []string{"photos"}), 0},
		{"dropped ones kept, the file protects another", recorded([]string{"gone"}, []string{"photos"}), true, recorded([]string{"gone", "orders"}, []string{"photos"}), 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &enginetest.Recorder{Doc: &state.Document{Central: tc.have}}
			if err := record(context.Background(), rec, file, tc.keepClaims); err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, rec.Doc.Central); d != "" {
				t.Errorf("record (-want +got):\n%s", d)
			}
			if len(rec.Updates) != tc.writes {
				t.Errorf("%d writes (%q), want %d", len(rec.Updates), rec.Updates, tc.writes)
			}
		})
	}
}
