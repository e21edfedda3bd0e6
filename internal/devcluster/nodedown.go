package devcluster

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
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
// they mounted unmounted, the bridge deleted, ip_forward restored, the kubepods cgroups
// removed, and the node's directory deleted. The machine-wide parts (bridge, cgroups,
// ip_forward) are touched only when this cluster owns the machine's real node. It reports
// whether there was a node to stop.
func stopRealNode(dir, kubectl, kubeconfig string, progress io.Writer) bool {
	p := nodePaths{dir: nodeDirFor(dir)}
	if _, err := os.Stat(p.dir); err != nil {
		return false
	}
	owner, _ := os.ReadFile(ownerFile)
	owns := strings.TrimSpace(string(owner)) == dir
	if name, err := os.ReadFile(p.join("node-name")); err == nil && kubectl != "" {
		deleteNodePods(kubectl, kubeconfig, strings.TrimSpace(string(name)))
	}
	for _, name := range []string{"kubelet"} {
		if pid, err := readPID(filepath.Join(dir, "pids", name)); err == nil && alive(pid) && runsBinary(pid, name) {
			stopPID(pid, 10*time.Second)
		}
	}
	if owns {
		killCgroupProcs()
	}
	if pid, err := readPID(filepath.Join(dir, "pids", "containerd")); err == nil && alive(pid) && runsBinary(pid, "containerd") {
		stopPID(pid, 10*time.Second)
	}
	killShims(p.socket())
	left := unmountUnder(p.dir)
	if owns {
		if _, err := net.InterfaceByName(Bridge); err == nil {
			if out, err := exec.Command("ip", "link", "delete", Bridge).CombinedOutput(); err != nil {
				fmt.Fprintf(progress, "dev: warning: delete bridge %s: %v: %s\n", Bridge, err, strings.TrimSpace(string(out)))
			}
		}
		if b, err := os.ReadFile(p.join("ip_forward")); err == nil {
			_ = os.WriteFile("/proc/sys/net/ipv4/ip_forward", b, 0o644)
		}
		removeKubepodsCgroups()
		_ = os.Remove(ownerFile)
	}
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

// killCgroupProcs kills every process left in a kubepods cgroup: the containers of pods the
// API server could not delete.
func killCgroupProcs() {
	for _, root := range cgroupMounts() {
		_ = filepath.WalkDir(filepath.Join(root, "kubepods"), func(path string, d os.DirEntry, err error) error {
			if err != nil || !d.IsDir() {
				return nil
			}
			b, _ := os.ReadFile(filepath.Join(path, "cgroup.procs"))
			for _, f := range strings.Fields(string(b)) {
				if pid, err := strconv.Atoi(f); err == nil {
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
			}
			return nil
		})
	}
}

// removeKubepodsCgroups removes the kubelet's kubepods cgroups from every hierarchy, the
// deepest first (a cgroup goes only once it has no children and no processes).
func removeKubepodsCgroups() {
	deadline := time.Now().Add(5 * time.Second)
	for _, root := range cgroupMounts() {
		var dirs []string
		_ = filepath.WalkDir(filepath.Join(root, "kubepods"), func(path string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, path)
			}
			return nil
		})
		sort.Slice(dirs, func(i, j int) bool { return len(dirs[i]) > len(dirs[j]) })
		for _, d := range dirs {
			// A killed process leaves its cgroup a moment later.
			for syscall.Rmdir(d) == syscall.EBUSY && time.Now().Before(deadline) {
				time.Sleep(50 * time.Millisecond)
			}
		}
	}
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
