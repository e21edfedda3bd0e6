package plan

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// Moved names each total two plans count otherwise, the plan's own and the lanes' (the
// namespace move's unlisted one too), by key: a total one side lacks counts as zero there.
func TestTotalsMoved(t *testing.T) {
	lane := func(key string, n int) Count { return Count{Key: key, N: n, What: key + " words"} }
	for _, tc := range []struct {
		name     string
		was, now Totals
		want     []MovedTotal
	}{
		{"the same", Totals{Counts{Create: 1}, []Count{lane("records", 2)}}, Totals{Counts{Create: 1}, []Count{lane("records", 2)}}, nil},
		{"own and a lane", Totals{Counts{Create: 1}, []Count{lane("records", 2), lane("spire", 0)}},
			Totals{Counts{Create: 2}, []Count{lane("records", 2), lane("spire", 1)}},
			[]MovedTotal{{Key: "create", What: "objects to create", Was: 1, Now: 2}, {Key: "spire", What: "spire words", Was: 0, Now: 1}}},
		{"a total only now has", Totals{}, Totals{Lanes: []Count{lane("move", 1)}},
			[]MovedTotal{{Key: "move", What: "move words", Now: 1}}},
		{"a zero total only one has", Totals{Lanes: []Count{lane("central", 0)}}, Totals{}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if d := cmp.Diff(tc.want, tc.was.Moved(tc.now), cmpopts.EquateEmpty()); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
			if tc.was.Equal(tc.now) != (len(tc.want) == 0) {
				t.Errorf("Equal = %v", tc.was.Equal(tc.now))
			}
		})
	}
	if got := (Totals{Counts{Delete: 3}, []Count{lane("records", 2)}}); got.N("delete") != 3 || got.N("records") != 2 || got.N("none") != 0 || got.Zero() {
		t.Errorf("N or Zero of %+v", got)
	}
}
