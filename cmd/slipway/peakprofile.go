package main

import (
	"fmt"
	"os"
	"runtime/metrics"
	"runtime/pprof"
	"time"
)

// envPeakProfile names the heap profile written at the run's largest heap: the profile at exit
// (SLIPWAY_MEMPROFILE) does not show what a long apply held at its peak (issue 17).
const envPeakProfile = "SLIPWAY_MEMPROFILE_PEAK"

const heapObjects = "/memory/classes/heap/objects:bytes"

// watchPeak writes the heap profile to path whenever the heap's objects pass their largest size
// so far by a tenth, checked every interval; stop ends it and reports a write that failed.
func watchPeak(path string, interval time.Duration) (stop func() error) {
	done, result := make(chan struct{}), make(chan error, 1)
	go func() {
		sample := []metrics.Sample{{Name: heapObjects}}
		var peak uint64
		var err error
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-done:
				result <- err
				return
			case <-t.C:
			}
			metrics.Read(sample)
			if v := sample[0].Value.Uint64(); v > peak+peak/10 && err == nil {
				peak = v
				err = writeHeap(path)
			}
		}
	}()
	return func() error { close(done); return <-result }
}

func writeHeap(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("%s: %w", envPeakProfile, err)
	}
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		_ = f.Close()
		return fmt.Errorf("%s %s: %w", envPeakProfile, path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("%s %s: %w", envPeakProfile, path, err)
	}
	return nil
}
