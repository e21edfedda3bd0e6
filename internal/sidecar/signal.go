package sidecar

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// TerminationLog is where the kubelet mounts each container's termination-message file (the
// default terminationMessagePath, which render keeps). Its source is the kubelet's per-container
// directory, <kubelet root>/pods/<pod UID>/containers/<container name>/<file>, so a process's
// mount table says which container of which pod it runs in: the name is the kubelet's, not
// something the process chose (argv[0], its command, a wrapper's name).
const TerminationLog = "/dev/termination-log"

// procs reads the processes of the pod's PID namespace, shared when some secret has `restart`.
// It reads only what the kernel shows every user: /proc/<pid>/stat, cgroup and mountinfo (not
// environ, root or the ns links, which a process of another user may not read).
type procs struct {
	root string // "/proc", or a test's stand-in tree
	self int
	kill func(pid int, sig syscall.Signal) error
}

type proc struct {
	pid, ppid int
	cgroup    string // the whole of /proc/<pid>/cgroup: the processes of one container share it
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
		stat, err := os.ReadFile(filepath.Join(p.root, e.Name(), "stat"))
		if err != nil {
			continue // ended
		}
		cg, err := os.ReadFile(filepath.Join(p.root, e.Name(), "cgroup"))
		if err != nil {
			continue
		}
		out = append(out, proc{pid: pid, ppid: parentOf(stat), cgroup: string(cg)})
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

// mountRoots are the roots (the 4th field: the path of the mounted directory or file within
// its file system) of the mounts of pid's mount table, by mount point.
func (p procs) mountRoots(pid int) (map[string][]string, error) {
	f, err := os.Open(filepath.Join(p.root, strconv.Itoa(pid), "mountinfo"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string][]string{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		// "36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw": paths octal-escaped.
		fs := strings.Fields(sc.Text())
		if len(fs) >= 5 {
			out[fs[4]] = append(out[fs[4]], fs[3])
		}
	}
	return out, sc.Err()
}

// containerDir is the kubelet's directory of container in the sidecar's own pod: the
// sidecar's termination log is <dir>/<its name>/<file>, so the service's is
// <dir>/<container>/<file>.
func (p procs) containerDir(container string) (string, error) {
	roots, err := p.mountRoots(p.self)
	if err != nil {
		return "", fmt.Errorf("the sidecar's own mount table: %w", err)
	}
	own := roots[TerminationLog]
	if len(own) != 1 || path.Base(path.Dir(path.Dir(own[0]))) != "containers" {
		return "", fmt.Errorf("the sidecar's own mount table has no kubelet termination log at %s (%d found): the service's container cannot be told from the others, so nothing is stopped", TerminationLog, len(own))
	}
	return path.Dir(path.Dir(own[0])) + "/" + container + "/", nil
}

// targets are the processes a restart stops: the first processes of the service's container
// (those whose parent is not in it; ppid 0 in the shared namespace, their parent being the
// runtime). The container is found by what the kubelet gave it, never by a command name: the
// processes whose mount table holds its termination log, then every process of their cgroups
// (one that left that mount namespace is still in its container's cgroup). Never PID 1 (the
// pause process), the sidecar, or a process of another container (the companion's).
func (p procs) targets(container string) ([]proc, error) {
	dir, err := p.containerDir(container)
	if err != nil {
		return nil, err
	}
	all, err := p.list()
	if err != nil {
		return nil, err
	}
	cgroups := map[string]bool{}
	var selfCgroup, pauseCgroup string
	for _, x := range all {
		switch x.pid {
		case p.self:
			selfCgroup = x.cgroup
		case 1:
			pauseCgroup = x.cgroup
		}
		roots, err := p.mountRoots(x.pid)
		if err != nil {
			continue // ended meanwhile
		}
		for _, r := range roots[TerminationLog] {
			if strings.HasPrefix(r, dir) {
				cgroups[x.cgroup] = true
			}
		}
	}
	if cgroups[selfCgroup] || cgroups[pauseCgroup] {
		return nil, errors.New("the service's cgroup is the sidecar's or the pause process's: containers cannot be told apart by cgroup here, so nothing is stopped")
	}
	in := map[int]bool{}
	for _, x := range all {
		if cgroups[x.cgroup] {
			in[x.pid] = true
		}
	}
	var out []proc
	for _, x := range all {
		if in[x.pid] && !in[x.ppid] && x.pid != 1 && x.pid != p.self {
			out = append(out, x)
		}
	}
	return out, nil
}

// stop sends SIGTERM to the first process of the service's container; Kubernetes starts the
// container again (the runtime ends the rest of it with its first process). No process is no
// error: the service has not started, and it will read the new files when it does.
func (p procs) stop(container string) ([]int, error) {
	ts, err := p.targets(container)
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, t := range ts {
		if err := p.kill(t.pid, syscall.SIGTERM); err != nil {
			return pids, fmt.Errorf("stop process %d of container %s: %w", t.pid, container, err)
		}
		pids = append(pids, t.pid)
	}
	return pids, nil
}
