package devcluster

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
)

// A descriptor inherited without close-on-exec (as flock(1) hands down its lock) must not
// reach a component dev up starts.
func TestInheritedDescriptorsDoNotReachComponents(t *testing.T) {
	path := filepath.Join(t.TempDir(), "held.lock")
	fd, err := syscall.Open(path, syscall.O_CREAT|syscall.O_RDWR, 0o644) // no O_CLOEXEC, like an inherited fd
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)

	closeInheritedOnExec()

	out, err := exec.Command("/bin/sh", "-c", "test -e /proc/self/fd/"+strconv.Itoa(fd)+" && readlink /proc/self/fd/"+strconv.Itoa(fd)+" || true").Output()
	if err != nil {
		t.Fatal(err)
	}
	if got := string(out); got != "" {
		t.Errorf("a started process still holds descriptor %d -> %s", fd, got)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatal(err)
	}
}
