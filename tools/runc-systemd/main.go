// Command runc-systemd is the OCI runtime of the real node's RuntimeClass systemd on a host
// whose cgroups are v1 with the v2 hierarchy beside them (a "hybrid" layout, mounted at
// /sys/fs/cgroup/unified). There containerd gives a container its v1 cgroups, read-only and
// without a cgroup namespace, where systemd as PID 1 cannot make its own cgroups ("Failed to
// create /init.scope control group: Read-only file system"), and containerd's cgroup_writable
// is refused on v1. systemd needs no controller, only a cgroup tree of its own: this wrapper
// gives the container, on create, a cgroup namespace and a read-write cgroup2 mount at
// /sys/fs/cgroup (the container's own cgroup of the v2 hierarchy, which runc joins beside the
// v1 ones), makes that cgroup and hands it to the container's root user (its host uid in a
// user namespace), then runs runc. Every other call goes to runc unchanged.
//
// runc is the file named runc beside the path this program is called by.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

const unified = "/sys/fs/cgroup/unified"

func main() {
	runc := filepath.Join(filepath.Dir(os.Args[0]), "runc")
	if bundle := createBundle(os.Args[1:]); bundle != "" {
		if err := adapt(filepath.Join(bundle, "config.json")); err != nil {
			fmt.Fprintf(os.Stderr, "runc-systemd: %v\n", err)
			os.Exit(1)
		}
	}
	err := syscall.Exec(runc, append([]string{runc}, os.Args[1:]...), os.Environ())
	fmt.Fprintf(os.Stderr, "runc-systemd: exec %s: %v\n", runc, err)
	os.Exit(1)
}

// createBundle is the bundle directory of a `runc [global flags] create --bundle DIR ...` call,
// "" for any other call.
func createBundle(args []string) string {
	create := -1
	for i, a := range args {
		if a == "create" {
			create = i
			break
		}
	}
	if create < 0 {
		return ""
	}
	for i := create + 1; i < len(args); i++ {
		switch a := args[i]; {
		case (a == "--bundle" || a == "-b") && i+1 < len(args):
			return args[i+1]
		case strings.HasPrefix(a, "--bundle="):
			return strings.TrimPrefix(a, "--bundle=")
		}
	}
	return "."
}

type object = map[string]any

// adapt rewrites the bundle's config.json on a hybrid host.
func adapt(path string) error {
	var st syscall.Statfs_t
	const cgroup2Magic = 0x63677270
	if err := syscall.Statfs(unified, &st); err != nil || st.Type != cgroup2Magic {
		return nil // not a hybrid host: nothing to do
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var spec object
	if err := json.Unmarshal(b, &spec); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	linux, _ := spec["linux"].(object)
	if linux == nil {
		return fmt.Errorf("%s: no linux section", path)
	}
	cgPath, _ := linux["cgroupsPath"].(string)
	if !strings.HasPrefix(cgPath, "/") {
		return fmt.Errorf("%s: cgroupsPath %q: want a cgroupfs path", path, cgPath)
	}
	namespaces, _ := linux["namespaces"].([]any)
	hasCgroupNS := false
	for _, n := range namespaces {
		if m, _ := n.(object); m["type"] == "cgroup" {
			hasCgroupNS = true
		}
	}
	if !hasCgroupNS {
		linux["namespaces"] = append(namespaces, object{"type": "cgroup"})
	}
	cgroupMount := object{"destination": "/sys/fs/cgroup", "type": "cgroup2", "source": "cgroup2",
		"options": []any{"nosuid", "noexec", "nodev", "relatime", "rw"}}
	mounts, _ := spec["mounts"].([]any)
	replaced := false
	for i, m := range mounts {
		if mm, _ := m.(object); mm["destination"] == "/sys/fs/cgroup" {
			mounts[i], replaced = cgroupMount, true
		}
	}
	if !replaced {
		mounts = append(mounts, cgroupMount)
	}
	spec["mounts"] = mounts
	dir := filepath.Join(unified, filepath.Clean(cgPath))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	uid, gid := rootID(linux["uidMappings"]), rootID(linux["gidMappings"])
	for _, f := range []string{"", "cgroup.procs", "cgroup.subtree_control", "cgroup.threads"} {
		if err := os.Chown(filepath.Join(dir, f), uid, gid); err != nil {
			return err
		}
	}
	out, err := json.Marshal(spec)
	if err != nil {
		return err
	}
	return os.WriteFile(path, out, 0o644)
}

// rootID is the host ID of the container's ID 0 in mappings, 0 without a user namespace.
func rootID(mappings any) int {
	list, _ := mappings.([]any)
	for _, m := range list {
		mm, _ := m.(object)
		if c, _ := mm["containerID"].(float64); c == 0 {
			h, _ := mm["hostID"].(float64)
			return int(h)
		}
	}
	return 0
}
