package parallel

import (
	"slices"
	"sync"
	"testing"
)

func TestForEach(t *testing.T) {
	for _, tc := range []struct {
		name    string
		n, jobs int
		wantMax int // the most calls that may run at once
	}{
		{"one at a time", 1, 5, 1},
		{"three at a time", 3, 10, 3},
		{"a bound of 0 is one", 0, 4, 1},
		{"no items", 4, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			running, most := 0, 0
			var seen []int
			gate := make(chan struct{})
			started := make(chan struct{}, tc.jobs)
			go func() {
				// Let calls pile up to the bound before any returns, so the bound is reached.
				for range min(tc.wantMax, tc.jobs) {
					<-started
				}
				close(gate)
			}()
			ForEach(tc.n, Indexes(tc.jobs), func(i int) {
				mu.Lock()
				running++
				most = max(most, running)
				seen = append(seen, i)
				mu.Unlock()
				started <- struct{}{}
				<-gate
				mu.Lock()
				running--
				mu.Unlock()
			})
			if tc.jobs == 0 {
				close(started)
			}
			slices.Sort(seen)
			if !slices.Equal(seen, Indexes(tc.jobs)) {
				t.Errorf("calls for %v, want every item once", seen)
			}
			if most != tc.wantMax {
				t.Errorf("%d calls at once, want %d", most, tc.wantMax)
			}
		})
	}
}
