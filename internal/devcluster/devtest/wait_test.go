package devtest

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// recorder is a testing.TB that records a Fatalf instead of ending the test.
type recorder struct {
	testing.TB
	fatal string
}

func (r *recorder) Helper() {}
func (r *recorder) Fatalf(format string, args ...any) {
	r.fatal = fmt.Sprintf(format, args...)
}

func TestWaitFor(t *testing.T) {
	for _, tc := range []struct {
		name      string
		trueAfter int32 // calls before cond reports true; -1: never
		limit     time.Duration
		wantFatal string
	}{
		{"at once", 0, time.Second, ""},
		{"after a few polls", 3, 5 * time.Second, ""},
		{"never", -1, 200 * time.Millisecond, "lock released: not after 200ms (last seen: call "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var calls atomic.Int32
			r := &recorder{TB: t}
			start := time.Now()
			WaitFor(r, tc.limit, "lock released", func() (bool, string) {
				n := calls.Add(1) - 1
				return tc.trueAfter >= 0 && n >= tc.trueAfter, fmt.Sprintf("call %d", n)
			})
			if tc.wantFatal == "" && r.fatal != "" || !strings.HasPrefix(r.fatal, tc.wantFatal) {
				t.Errorf("fatal %q, want one starting %q", r.fatal, tc.wantFatal)
			}
			if tc.trueAfter >= 0 && time.Since(start) > tc.limit {
				t.Errorf("took %s, past the limit %s", time.Since(start), tc.limit)
			}
			if tc.trueAfter > 0 && calls.Load() != tc.trueAfter+1 {
				t.Errorf("cond called %d times, want %d", calls.Load(), tc.trueAfter+1)
			}
		})
	}
}
