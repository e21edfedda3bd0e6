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
	peak, parent, err := runMeasured(exec.Command("true"))
	if err != nil {
		t.Fatal(err)
	}
	if peak > 128 {
		t.Errorf("`true` measured at %.0f MiB (the bench at %.0f MiB when it started); want the child's own few MiB", peak, parent)
	}
}
