package devcluster

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// cgroupsUsable reports whether the kubelet finds the cgroups it needs: cgroup v2 with the
// cpu and memory controllers, or the v1 cpu, memory and pids hierarchies (this machine's
// kind: a hybrid layout, where the kubelet runs with failCgroupV1: false).
func cgroupsUsable() bool {
	var st syscall.Statfs_t
	if err := syscall.Statfs("/sys/fs/cgroup", &st); err != nil {
		return false
	}
	const cgroup2Magic = 0x63677270
	if st.Type == cgroup2Magic {
		b, err := os.ReadFile("/sys/fs/cgroup/cgroup.controllers")
		ctrl := strings.Fields(string(b))
		return err == nil && slices.Contains(ctrl, "cpu") && slices.Contains(ctrl, "memory")
	}
	for _, c := range []string{"cpu", "memory", "pids"} {
		if _, err := os.Stat(filepath.Join("/sys/fs/cgroup", c, "cgroup.procs")); err != nil {
			return false
		}
	}
	return true
}

// cniPluginsPresent reports whether the bridge and host-local plugins are in one of
// cniBinDirs.
func cniPluginsPresent() bool {
	for _, d := range cniBinDirs {
		_, errB := os.Stat(filepath.Join(d, "bridge"))
		_, errH := os.Stat(filepath.Join(d, "host-local"))
		if errB == nil && errH == nil {
			return true
		}
	}
	return false
}

// nodeToolCached reports whether every binary of the node tool module is in its cache.
func nodeToolCached(module string) bool {
	for _, t := range nodeTools {
		if t.module != module {
			continue
		}
		dir, err := toolCacheDir(t)
		if err != nil {
			return false
		}
		for _, b := range t.bins {
			if _, err := os.Stat(filepath.Join(dir, "bin", b)); err != nil {
				return false
			}
		}
		return true
	}
	return false
}

// runcBuildable reports whether cgo can build runc with seccomp here.
func runcBuildable() bool {
	if _, err := exec.LookPath("gcc"); err != nil {
		return false
	}
	return exec.Command("pkg-config", "--exists", "libseccomp").Run() == nil
}

// claimNodeHost records, before the node makes them, what it makes machine-wide: its bridge
// (the CNI plugin makes it at the first pod), its cgroups and ip_forward turned on; and makes
// the kubelet's cgroup root. In slot 0 it also writes ownerFile, which a slipway older than
// the slots reads to find whose the bridge is.
func (e *Env) claimNodeHost(p nodePaths) error {
	h := e.hostShare()
	fwd, err := os.ReadFile(p.join("ip_forward"))
	if err != nil {
		return err
	}
	for _, m := range []Made{{madeIPForward, strings.TrimSpace(string(fwd))}, {madeBridge, h.Bridge}, {madeCgroup, h.kubepods()}} {
		if err := e.made(m); err != nil {
			return err
		}
	}
	if err := ensureCgroupRoot(h.CgroupRoot); err != nil {
		return err
	}
	if h.Slot == 0 {
		return os.WriteFile(ownerFile(), []byte(e.Dir+"\n"), 0o644)
	}
	return nil
}

// saveIPForward keeps net.ipv4.ip_forward as the node found it (the bridge plugin turns it
// on), once, for dev down to restore.
func saveIPForward(p nodePaths) error {
	if _, err := os.Stat(p.join("ip_forward")); err == nil {
		return nil
	}
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_forward")
	if err != nil {
		return err
	}
	return os.WriteFile(p.join("ip_forward"), b, 0o644)
}

// ensureBridge makes the real node's bridge with its gateway address and a MAC of its own when
// the CNI plugin has not made it yet (it would at the node's first pod), so the servers can
// listen there before any pod runs; on a bridge that exists it only fixes the MAC. The plugin
// takes over a bridge that has its address; the node's stop deletes it (it is recorded as this
// environment's first).
func (e *Env) ensureBridge() error {
	h := e.hostShare()
	if ifc, err := net.InterfaceByName(h.Bridge); err == nil {
		addrs, _ := ifc.Addrs()
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok && ipn.IP.String() == h.Gateway && ifc.Flags&net.FlagUp != 0 {
				if ifc.HardwareAddr.String() == h.BridgeMAC() {
					return nil
				}
				return ip("link", "set", h.Bridge, "address", h.BridgeMAC())
			}
		}
	}
	if err := e.made(Made{madeBridge, h.Bridge}); err != nil {
		return err
	}
	_, n, _ := net.ParseCIDR(h.PodCIDR)
	ones, _ := n.Mask.Size()
	for _, args := range [][]string{
		{"link", "add", "name", h.Bridge, "type", "bridge"},
		{"link", "set", h.Bridge, "address", h.BridgeMAC()},
		{"addr", "replace", h.Gateway + "/" + strconv.Itoa(ones), "dev", h.Bridge},
		{"link", "set", h.Bridge, "up"},
	} {
		if err := ip(args...); err != nil {
			return err
		}
	}
	return nil
}

// ip runs ip(8) with args; a bridge that exists already is no error.
func ip(args ...string) error {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil && !(args[1] == "add" && strings.Contains(string(out), "File exists")) {
		return fmt.Errorf("dev environment: ip %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}
