package sidecar

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// procs reads the processes of the PID namespace: the pod's, shared when some secret has
// `restart`. Only /proc/<pid>/cmdline and stat are read: a process of another user shows them,
// not its environment or files.
type procs struct {
	root string // "/proc", or a test's tree
	self int
	kill func(pid int, sig syscall.Signal) error
}

type proc struct {
	pid, ppid int
	argv0     string
}

// list reads every process it can; one that ended meanwhile is skipped.
func (p procs) list() ([]proc, error) {
	ents, err := os.ReadDir(p.root)
	if err != nil {
		return nil, fmt.Errorf("processes: %w", err)
	}
	var out []proc
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmd, err := os.ReadFile(filepath.Join(p.root, e.Name(), "cmdline"))
		if err != nil || len(cmd) == 0 {
			continue // ended, or a kernel thread
		}
		stat, err := os.ReadFile(filepath.Join(p.root, e.Name(), "stat"))
		if err != nil {
			continue
		}
		argv0, _, _ := bytes.Cut(cmd, []byte{0})
		out = append(out, proc{pid: pid, ppid: parentOf(stat), argv0: string(argv0)})
	}
	return out, nil
}

// parentOf reads the parent PID from /proc/<pid>/stat ("pid (comm) state ppid …"); the command
// may hold spaces and parentheses, so the fields after its last ')' are read.
func parentOf(stat []byte) int {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return -1
	}
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 2 {
		return -1
	}
	n, err := strconv.Atoi(f[1])
	if err != nil {
		return -1
	}
	return n
}

// targets are the processes a restart stops. Never PID 1 (the pod's pause process), the
// sidecar itself (or its probes, which run its binary) nor the companion (or its children). With a service
// command, the processes of that argv[0] whose parent is not one too (the top of the service);
// without one, every top-level process of the namespace (parent 0 or 1: a container's first
// process) that is none of those.
func (p procs) targets(service, companion, selfArgv0 string) ([]proc, error) {
	all, err := p.list()
	if err != nil {
		return nil, err
	}
	byPID := make(map[int]proc, len(all))
	for _, x := range all {
		byPID[x.pid] = x
	}
	var out []proc
	for _, x := range all {
		switch {
		case x.pid == 1, x.pid == p.self, x.argv0 == selfArgv0:
			continue
		case companion != "" && underCompanion(x, byPID, companion):
			continue
		case service != "":
			if x.argv0 != service || byPID[x.ppid].argv0 == service {
				continue
			}
		case x.ppid != 0 && x.ppid != 1:
			continue
		}
		out = append(out, x)
	}
	return out, nil
}

// stop sends SIGTERM to the service; Kubernetes starts its container again. It is an error
// when there is no process to stop: the service has not started (then it will read the new
// files anyway) is told apart by the caller.
func (p procs) stop(service, companion, selfArgv0 string) ([]int, error) {
	ts, err := p.targets(service, companion, selfArgv0)
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, t := range ts {
		if err := p.kill(t.pid, syscall.SIGTERM); err != nil {
			return pids, fmt.Errorf("stop process %d (%s): %w", t.pid, t.argv0, err)
		}
		pids = append(pids, t.pid)
	}
	return pids, nil
}

// underCompanion reports whether x is the companion or one of its descendants.
func underCompanion(x proc, byPID map[int]proc, companion string) bool {
	for i := 0; i < len(byPID) && x.pid > 1; i++ {
		if x.argv0 == companion {
			return true
		}
		p, ok := byPID[x.ppid]
		if !ok {
			return false
		}
		x = p
	}
	return false
}
