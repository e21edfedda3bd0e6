package devcluster

import (
	"os"
	"strconv"
	"syscall"
)

// closeInheritedOnExec marks every descriptor this process inherited as close-on-exec, so a
// component started by `dev up` (it outlives us) does not keep them open. Go opens its own
// files close-on-exec, but a descriptor handed down by whoever started us is not: a `dev up`
// run under flock(1) gave knotd the lock's descriptor, and the lock stayed held for as long as
// knotd ran. Called before each start; marking an already-marked descriptor is harmless.
func closeInheritedOnExec() {
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return // not Linux with /proc: nothing to walk; the components start as before
	}
	for _, e := range entries {
		fd, err := strconv.Atoi(e.Name())
		if err != nil || fd <= 2 {
			continue
		}
		syscall.CloseOnExec(fd)
	}
}
