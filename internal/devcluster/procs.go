package devcluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// lockFile takes an exclusive flock on path, waiting while ctx lives.
func lockFile(ctx context.Context, path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("dev cluster: lock %s: %w", path, err)
	}
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("dev cluster: lock %s: %w", path, err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("dev cluster: waiting for lock %s: %w", path, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// freePorts returns n distinct loopback TCP ports that were free a moment ago. Holding all the
// listeners until every port is chosen keeps the picks distinct.
func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("dev cluster: find a free loopback port: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// startProcess starts a component detached from our session (it outlives `dev up`), with its
// output in logs/<name>.log, and records its PID in pids/<name>.
func (e *Env) startProcess(name string, args []string, extraEnv ...string) (int, error) {
	return e.startExec(name, filepath.Join(e.BinDir, name), args, extraEnv...)
}

// startExec is startProcess for an executable outside BinDir (a tool cached on its own, or a
// wrapper that execs it).
func (e *Env) startExec(name, exe string, args []string, extraEnv ...string) (int, error) {
	pid, err := spawn(exe, args, extraEnv, filepath.Join(e.Dir, "logs", name+".log"), e.Dir)
	if err != nil {
		return 0, fmt.Errorf("dev cluster: start %s: %w", name, err)
	}
	if err := os.WriteFile(filepath.Join(e.Dir, "pids", name), []byte(strconv.Itoa(pid)+"\n"), 0o644); err != nil {
		return pid, err
	}
	return pid, nil
}

// ourProcess reports whether pid runs a binary from binDir: a recycled PID is never signalled.
func ourProcess(pid int, binDir string) bool {
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	if err != nil {
		return false
	}
	exe = strings.TrimSuffix(exe, " (deleted)")
	return filepath.Dir(exe) == filepath.Clean(binDir)
}

// alive reports whether pid exists and is not a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state field follows the parenthesised command name.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

// stopPID sends SIGTERM, waits up to grace, then SIGKILL.
func stopPID(pid int, grace time.Duration) {
	_ = syscall.Kill(pid, syscall.SIGTERM)
	deadline := time.Now().Add(grace)
	for time.Now().Before(deadline) {
		if !alive(pid) {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	_ = syscall.Kill(pid, syscall.SIGKILL)
	for range 50 {
		if !alive(pid) {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func readPID(path string) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(b)))
}

// spawn starts exe outside our session (it outlives `dev up`), with extraEnv added to ours,
// its output appended to logPath, and no descriptor it would inherit from us.
func spawn(exe string, args, extraEnv []string, logPath, dir string) (int, error) {
	lf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return 0, err
	}
	defer lf.Close()
	closeInheritedOnExec()
	cmd := exec.Command(exe, args...)
	cmd.Stdout, cmd.Stderr = lf, lf
	cmd.Env = append(os.Environ(), extraEnv...)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	pid := cmd.Process.Pid
	_ = cmd.Process.Release()
	return pid, nil
}

// PIDs are the process IDs the environment recorded for its components (pids/<name>), by
// name; a file that cannot be read is left out. For measuring what each process spends (the
// bench): whether a PID still runs its component is for the caller to check.
func (e *Env) PIDs() map[string]int {
	entries, err := os.ReadDir(filepath.Join(e.Dir, "pids"))
	if err != nil {
		return nil
	}
	out := map[string]int{}
	for _, en := range entries {
		if pid, err := readPID(filepath.Join(e.Dir, "pids", en.Name())); err == nil {
			out[en.Name()] = pid
		}
	}
	return out
}
