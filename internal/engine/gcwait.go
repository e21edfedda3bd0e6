package engine

import (
	"os"
	"runtime/debug"
)

// rolloutGCPercent is the garbage collector's target while an apply's nodes roll out: the
// heap may grow by half of what is live before a collection, not by all of it (GOGC 100).
//
// Measured (issue 17, BENCHMARKS.md): at the peak of a 1,000-node first apply 72 MB of heap
// was in use (the rendered objects, the watch caches) while the process held 207 MiB: the
// rest was the collector's headroom, taken while the apply mostly waits on the cluster. A
// plan or a no-op apply never gets here; their peak is what they hold, and GOGC 50 made a
// 1,000-node plan slower (1.38-1.40 s against 1.26-1.32 s) for 0-7 MB less.
const rolloutGCPercent = 50

// gcWhileRollingOut sets the collector's target for the rollouts and returns what sets it
// back; GOGC set by the operator is left alone.
func gcWhileRollingOut() (restore func()) {
	if os.Getenv("GOGC") != "" {
		return func() {}
	}
	old := debug.SetGCPercent(rolloutGCPercent)
	return func() { debug.SetGCPercent(old) }
}
