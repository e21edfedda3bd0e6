package main

import (
	"os/exec"
	"runtime"
	"testing"
)

// A small command run after the bench held much memory is measured at its own size, not at
// the bench's high-water mark, which exec hands to the child.
func TestPeakRSSIsTheChilds(t *testing.T) {
	if _, err := exec.LookPath("true"); err != nil {
		t.Fatal(err)
	}
	held := make([]byte, 256<<20)
	for i := range held {
		if i%4096 == 0 {
			held[i] = 1
		}
	}
	runtime.KeepAlive(held)
	held = nil
	peak, parent, _, err := runMeasured(exec.Command("true"))
	if err != nil {
		t.Fatal(err)
	}
	if peak > 128 {
		t.Errorf("`true` measured at %.0f MiB (the bench at %.0f MiB when it started); want the child's own few MiB", peak, parent)
	}
}

// The CPU of a child is its own, user and system time together.
func TestRunMeasuredCountsTheChildsCPU(t *testing.T) {
	_, _, cpu, err := runMeasured(exec.Command("sh", "-c", "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done"))
	if err != nil {
		t.Fatal(err)
	}
	if cpu <= 0 {
		t.Errorf("a busy loop measured at %.3f s of CPU, want more than 0", cpu)
	}
}
