package devcluster

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// stopRealNode takes the real node of the cluster in dir down, leaving the machine as it was:
// its pods deleted through the API server first (shims and containers outlive containerd),
// the kubelet and containerd stopped, leftover shims and container processes killed, what
// they mounted unmounted, then what the node made machine-wide and recorded (hostshare.go:
// its bridge, its cgroups, ip_forward) undone, and the node's directory deleted. Nothing of
// another environment's slot is touched. It reports whether there was a node to stop.
func stopRealNode(dir, kubectl, kubeconfig string, progress io.Writer) bool {
	p := nodePaths{dir: nodeDirFor(dir)}
	if _, err := os.Stat(p.dir); err != nil {
		return false
	}
	if name, err := os.ReadFile(p.join("node-name")); err == nil && kubectl != "" {
		deleteNodePods(kubectl, kubeconfig, strings.TrimSpace(string(name)))
	}
	for _, name := range []string{"kubelet"} {
		if pid, err := readPID(filepath.Join(dir, "pids", name)); err == nil && alive(pid) && runsBinary(pid, name) {
			stopPID(pid, 10*time.Second)
		}
	}
	h, _ := loadHost(dir)
	for _, m := range h.Made {
		if m.Kind == madeCgroup {
			killCgroupProcs(m.Name)
		}
	}
	if pid, err := readPID(filepath.Join(dir, "pids", "containerd")); err == nil && alive(pid) && runsBinary(pid, "containerd") {
		stopPID(pid, 10*time.Second)
	}
	killShims(p.socket())
	left := unmountUnder(p.dir)
	undoHostKinds(dir, progress, madeBridge, madeIPForward, madeCgroup)
	stopReaper(dir)
	for _, name := range []string{"kubelet", "containerd"} {
		_ = os.Remove(filepath.Join(dir, "pids", name))
	}
	if len(left) > 0 {
		// Never delete through a mount that is still there (a claim's directory is mounted
		// into pods): what stays is reported instead.
		fmt.Fprintf(progress, "dev: warning: %d mounts under %s could not be unmounted (%s); left it in place\n", len(left), p.dir, left[0])
		return true
	}
	if err := os.RemoveAll(p.dir); err != nil {
		fmt.Fprintf(progress, "dev: warning: remove %s: %v\n", p.dir, err)
	}
	return true
}

// deleteNodePods deletes the pods bound to node and the node, waiting at most a minute.
func deleteNodePods(kubectl, kubeconfig, node string) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	_ = exec.CommandContext(ctx, kubectl, "--kubeconfig", kubeconfig, "delete", "pods", "--all-namespaces",
		"--field-selector", "spec.nodeName="+node, "--grace-period=10", "--timeout=60s").Run()
	_ = exec.CommandContext(ctx, kubectl, "--kubeconfig", kubeconfig, "delete", "node", node, "--wait=false").Run()
}

// killShims kills the containerd shims serving the containerd at socket.
func killShims(socket string) {
	entries, _ := os.ReadDir("/proc")
	for _, en := range entries {
		pid, err := strconv.Atoi(en.Name())
		if err != nil || !runsBinary(pid, "containerd-shim-runc-v2") {
			continue
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err == nil && slices.Contains(strings.Split(string(b), "\x00"), socket) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// cgroupMounts are the mount points of the cgroup hierarchies (v1 and v2).
func cgroupMounts() []string {
	var out []string
	for _, m := range mounts() {
		if m.fstype == "cgroup" || m.fstype == "cgroup2" {
			out = append(out, m.point)
		}
	}
	return out
}

// unmountUnder unmounts every mount at or below dir, the deepest first, and returns the mount
// points still there.
func unmountUnder(dir string) []string {
	var points []string
	for _, m := range mounts() {
		if m.point == dir || strings.HasPrefix(m.point, dir+"/") {
			points = append(points, m.point)
		}
	}
	sort.Slice(points, func(i, j int) bool { return len(points[i]) > len(points[j]) })
	for _, mp := range points {
		_ = syscall.Unmount(mp, syscall.MNT_DETACH)
	}
	var left []string
	for _, m := range mounts() {
		if m.point == dir || strings.HasPrefix(m.point, dir+"/") {
			left = append(left, m.point)
		}
	}
	return left
}

type mount struct{ point, fstype string }

// mounts lists this process's mounts (/proc/self/mountinfo).
func mounts() []mount {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []mount
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		// ID parent major:minor root point options [optional...] - fstype source super
		fields := strings.Fields(sc.Text())
		sep := slices.Index(fields, "-")
		if len(fields) < 5 || sep < 0 || sep+1 >= len(fields) {
			continue
		}
		out = append(out, mount{point: unescapeMount(fields[4]), fstype: fields[sep+1]})
	}
	return out
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
