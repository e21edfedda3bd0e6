package main

import (
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"time"
)

// Profiling is for developers measuring scale (BENCHMARKS.md, issue 17), so it is switched on
// by environment variables rather than flags a user would see in --help:
//
//	SLIPWAY_CPUPROFILE=cpu.pprof SLIPWAY_MEMPROFILE=heap.pprof slipway plan
//	SLIPWAY_MEMPROFILE_PEAK=peak.pprof slipway apply --yes   # the heap at its largest
//	SLIPWAY_TRACE=plan.trace slipway plan   # go tool trace: where the wall time waits
const (
	envCPUProfile = "SLIPWAY_CPUPROFILE"
	envMemProfile = "SLIPWAY_MEMPROFILE"
	envTrace      = "SLIPWAY_TRACE"
)

// startProfiles starts the profiles getenv asks for; stop writes them. A profile that cannot be
// written is reported, never fatal to the command being measured.
func startProfiles(getenv func(string) string) (stop func() error, err error) {
	cpuPath, memPath := getenv(envCPUProfile), getenv(envMemProfile)
	var cpu *os.File
	if cpuPath != "" {
		if cpu, err = os.Create(cpuPath); err != nil {
			return nil, fmt.Errorf("%s: %w", envCPUProfile, err)
		}
		if err := pprof.StartCPUProfile(cpu); err != nil {
			_ = cpu.Close()
			return nil, fmt.Errorf("%s %s: %w", envCPUProfile, cpuPath, err)
		}
	}
	var tr *os.File
	if p := getenv(envTrace); p != "" {
		if tr, err = os.Create(p); err != nil {
			return nil, fmt.Errorf("%s: %w", envTrace, err)
		}
		if err := trace.Start(tr); err != nil {
			_ = tr.Close()
			return nil, fmt.Errorf("%s %s: %w", envTrace, p, err)
		}
	}
	stopPeak := func() error { return nil }
	if p := getenv(envPeakProfile); p != "" {
		stopPeak = watchPeak(p, 200*time.Millisecond)
	}
	return func() error {
		if err := stopPeak(); err != nil {
			return err
		}
		if tr != nil {
			trace.Stop()
			if err := tr.Close(); err != nil {
				return fmt.Errorf("%s: %w", envTrace, err)
			}
		}
		if cpu != nil {
			pprof.StopCPUProfile()
			if err := cpu.Close(); err != nil {
				return fmt.Errorf("%s %s: %w", envCPUProfile, cpuPath, err)
			}
		}
		if memPath == "" {
			return nil
		}
		f, err := os.Create(memPath)
		if err != nil {
			return fmt.Errorf("%s: %w", envMemProfile, err)
		}
		// The heap profile carries both what was allocated over the run (alloc_space) and
		// what is still live at its end (inuse_space, after this GC).
		runtime.GC()
		if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
			_ = f.Close()
			return fmt.Errorf("%s %s: %w", envMemProfile, memPath, err)
		}
		if err := f.Close(); err != nil {
			return fmt.Errorf("%s %s: %w", envMemProfile, memPath, err)
		}
		return nil
	}, nil
}
