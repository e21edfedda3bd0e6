package devcluster

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// machineOps are hostOps on this machine.
type machineOps struct{}

func (machineOps) deleteLink(name string) error {
	if !interfaceExists(name) {
		return nil
	}
	if out, err := exec.Command("ip", "link", "delete", name).CombinedOutput(); err != nil {
		return fmt.Errorf("%w: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

func (machineOps) deleteLoAddr(ip string) error {
	if !hasAddr(ip) {
		return nil
	}
	if out, err := exec.Command("ip", "addr", "del", ip+"/32", "dev", "lo").CombinedOutput(); err != nil {
		return fmt.Errorf("%w: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

func (machineOps) removeCgroups(tree string) {
	killCgroupProcs(tree)
	removeCgroupTree(tree)
}

func (machineOps) setIPForward(value string) error {
	return os.WriteFile("/proc/sys/net/ipv4/ip_forward", []byte(value+"\n"), 0o644)
}

func (machineOps) othersLive(dir string) bool { return otherLiveSlots(dir) }

// ensureCgroupRoot makes the kubelet's cgroupRoot in every hierarchy (the kubelet refuses one
// that does not exist), a cpuset one with its parent's CPUs and memory nodes.
func ensureCgroupRoot(root string) error {
	if root == "/" || root == "" {
		return nil
	}
	for _, mnt := range cgroupMounts() {
		d := filepath.Join(mnt, root)
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("cgroup %s: %w", d, err)
		}
		for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
			if b, err := os.ReadFile(filepath.Join(mnt, f)); err == nil {
				if cur, _ := os.ReadFile(filepath.Join(d, f)); strings.TrimSpace(string(cur)) == "" {
					_ = os.WriteFile(filepath.Join(d, f), b, 0o644)
				}
			}
		}
	}
	return nil
}

// killCgroupProcs kills every process left in the cgroup tree (kubepods, or an environment's
// cgroup root) of every hierarchy: the containers of pods the API server could not delete.
func killCgroupProcs(tree string) {
	if filepath.Clean("/"+tree) == "/" {
		return // never every process of the machine
	}
	for _, root := range cgroupMounts() {
		_ = filepath.WalkDir(filepath.Join(root, tree), func(path string, d os.DirEntry, err error) error {
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

// removeCgroupTree removes the cgroup tree from every hierarchy, the deepest first (a cgroup
// goes only once it has no children and no processes).
func removeCgroupTree(tree string) {
	if filepath.Clean("/"+tree) == "/" {
		return
	}
	deadline := time.Now().Add(5 * time.Second)
	for _, root := range cgroupMounts() {
		var dirs []string
		_ = filepath.WalkDir(filepath.Join(root, tree), func(path string, d os.DirEntry, err error) error {
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
