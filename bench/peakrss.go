package main

import (
	"bufio"
	"os"
	"os/exec"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// runMeasured runs cmd and returns the peak resident set of its process, MiB, the bench's
// own resident set when it started, and the CPU the process spent (user + system, seconds:
// wait4's rusage, so every thread and the whole run are counted).
//
// The kernel's Maxrss of a child (wait4's rusage) is not the child's alone: exec copies the
// high-water mark of the memory it replaces into it, and Go starts a child sharing the
// bench's memory until that exec, so the child's figure was at least the bench's own peak
// (173 MB for every step after the bench pushed 1,000 images with crane in-process: issue 17).
// The bench therefore gives its free memory back and resets its own high-water mark to its
// current resident set just before starting the child (/proc/self/clear_refs, "5"); a figure
// not above parentMB may still be the bench's.
func runMeasured(cmd *exec.Cmd) (peakMB, parentMB, cpuSeconds float64, err error) {
	debug.FreeOSMemory()
	_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
	parentMB = selfRSSMB()
	err = cmd.Run()
	if cmd.ProcessState != nil {
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			peakMB = float64(ru.Maxrss) / 1024
			cpuSeconds = time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
		}
	}
	return peakMB, parentMB, cpuSeconds, err
}

// selfRSSMB is this process's resident set (VmRSS), MiB; 0 when unknown.
func selfRSSMB() float64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			return kb / 1024
		}
	}
	return 0
}
