package devtest

import (
	"testing"
	"time"
)

// pollEvery is how often WaitFor asks again: often enough that a test does not wait much past
// the moment, rarely enough not to load the API server that several packages share.
const pollEvery = 50 * time.Millisecond

// WaitFor asks cond until it reports true, and fails the test if that has not happened within
// limit. cond also says what it saw, so the failure names the last state rather than only
// that time ran out. Tests wait with it instead of sleeping a guess.
func WaitFor(t testing.TB, limit time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.NewTimer(limit)
	defer deadline.Stop()
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	for {
		ok, seen := cond()
		if ok {
			return
		}
		select {
		case <-deadline.C:
			if ok, seen = cond(); !ok {
				t.Fatalf("%s: not after %s (last seen: %s)", what, limit, seen)
			}
			return
		case <-tick.C:
		}
	}
}
