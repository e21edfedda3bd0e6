package devcluster

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"
)

// Bridge and PodCIDR are the real node's pod network in slot 0 (hostshare.go; another slot
// has its own): one CNI bridge with host-local addresses, apart from kwok's 10.0.0.0/16 and
// the Services' 10.96.0.0/16. The host reaches the pods over the bridge; there is no
// kube-proxy and no cluster DNS.
const (
	Bridge  = "slipway0"
	PodCIDR = "10.244.0.0/24"
)

// cniBinDirs are where containerd looks for the CNI plugins (Debian's
// containernetworking-plugins installs them in /usr/lib/cni).
var cniBinDirs = []string{"/usr/lib/cni", "/opt/cni/bin"}

// nodePaths are the files and directories of the real node. They live under /run, apart
// from the data directory: a user-namespaced container's root (an unprivileged host uid)
// must traverse every parent of its root file system's mount point, and the data directory
// may be under a home directory of mode 0700 (the default ~/.local/state/slipway/dev is).
type nodePaths struct{ dir string }

// nodeDirFor is the real node's directory of the dev cluster in dataDir: one per data
// directory, so a stale one is never another cluster's.
func nodeDirFor(dataDir string) string {
	return filepath.Join("/run/slipway-dev", shortHash(dataDir))
}

func (p nodePaths) join(elem ...string) string {
	return filepath.Join(append([]string{p.dir}, elem...)...)
}
func (p nodePaths) socket() string      { return p.join("containerd.sock") }
func (p nodePaths) certsDir() string    { return p.join("certs.d") }
func (p nodePaths) cniConfDir() string  { return p.join("cni", "net.d") }
func (p nodePaths) kubeletRoot() string { return p.join("kubelet") }

// containerdConfig is containerd's configuration (version 3) for the real node:
//   - restrict_oom_score_adj: a sandbox without CAP_SYS_RESOURCE cannot lower an oom_score_adj,
//     and the pod sandbox asks for -998 (runc then fails with "can't get final child's PID
//     from pipe: EOF");
//   - the registry's hosts.toml (plain HTTP on loopback), the pause image built here;
//   - runtime handlers runc (this runc) and systemd (the RuntimeClass dev up creates): runc
//     through tools/runc-systemd, which gives the container a cgroup tree of its own on a
//     cgroup v1 host, where systemd as PID 1 cannot start otherwise;
//   - network namespaces under its state directory, so dev down finds them;
//   - NRI off: its socket would be machine-wide.
func containerdConfig(p nodePaths, sandboxImage string) string {
	runtime := func(name, binary string) string {
		return fmt.Sprintf(`
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.%s]
      runtime_type = 'io.containerd.runc.v2'
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.%s.options]
        BinaryName = %q
`, name, name, binary)
	}
	return fmt.Sprintf(`version = 3
root = %q
state = %q

[grpc]
  address = %q

[ttrpc]
  address = %q

[debug]
  address = %q

[plugins.'io.containerd.nri.v1.nri']
  disable = true

[plugins.'io.containerd.cri.v1.images']
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = %q
  [plugins.'io.containerd.cri.v1.images'.registry]
    config_path = %q

[plugins.'io.containerd.cri.v1.runtime']
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  [plugins.'io.containerd.cri.v1.runtime'.cni]
    bin_dirs = [%q, %q]
    conf_dir = %q
  [plugins.'io.containerd.cri.v1.runtime'.containerd]
    default_runtime_name = 'runc'
%s%s`,
		p.join("containerd", "root"), p.join("containerd", "state"),
		p.socket(), p.socket()+".ttrpc", p.join("containerd-debug.sock"),
		sandboxImage, p.certsDir(),
		cniBinDirs[0], cniBinDirs[1], p.cniConfDir(),
		runtime("runc", p.join("bin", "runc")), runtime("systemd", p.join("bin", "runc-systemd")))
}

// registryHosts is containerd's hosts.toml for the dev registry: plain HTTP.
func registryHosts(registry string) string {
	return fmt.Sprintf(`server = "http://%[1]s"

[host."http://%[1]s"]
  capabilities = ["pull", "resolve"]
`, registry)
}

// cniConfig is the one network of the real node: a bridge that is the pods' gateway, with
// host-local addresses kept under the node's directory. No masquerade: the pods reach the
// host, and the host the pods, which is all the dev environment needs.
func cniConfig(p nodePaths, share HostShare) string {
	return fmt.Sprintf(`{
  "cniVersion": "1.0.0",
  "name": "slipway-dev",
  "plugins": [
    {
      "type": "bridge",
      "bridge": %q,
      "isGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "ranges": [[{"subnet": %q}]],
        "routes": [{"dst": "0.0.0.0/0"}],
        "dataDir": %q
      }
    }
  ]
}
`, share.Bridge, share.PodCIDR, p.join("cni", "ipam"))
}

// writeContainerdFiles writes containerd's configuration, the registry's hosts.toml and the
// CNI network; the directories a user-namespaced container passes through are 0711.
func (e *Env) writeContainerdFiles(p nodePaths, b nodeBinaries, sandboxImage string) error {
	for _, d := range []string{p.dir, p.join("containerd"), p.join("containerd", "state"), p.join("containerd", "root"), p.kubeletRoot()} {
		if err := os.MkdirAll(d, 0o711); err != nil {
			return err
		}
		if err := os.Chmod(d, 0o711); err != nil {
			return err
		}
	}
	hostsDir := filepath.Join(p.certsDir(), e.Registry)
	for _, d := range []string{hostsDir, p.cniConfDir(), p.join("cni", "ipam"), p.join("pod-logs")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	// runc-systemd runs the runc beside the path it is called by.
	if err := os.MkdirAll(p.join("bin"), 0o755); err != nil {
		return err
	}
	for link, target := range map[string]string{"runc": b.runc, "runc-systemd": b.runcSystemd} {
		_ = os.Remove(p.join("bin", link))
		if err := os.Symlink(target, p.join("bin", link)); err != nil {
			return err
		}
	}
	files := map[string]string{
		p.join("containerd.toml"):                            containerdConfig(p, sandboxImage),
		filepath.Join(hostsDir, "hosts.toml"):                registryHosts(e.Registry),
		filepath.Join(p.cniConfDir(), "10-slipway.conflist"): cniConfig(p, *e.hostShare()),
	}
	for path, content := range files {
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// startContainerd starts containerd with its own shim first on PATH: found after another
// (Debian's containerd 1.6 shim in /usr/bin), its runtime introspection fails quietly, every
// handler reports no user namespaces and the kubelet refuses every hostUsers: false pod.
func (e *Env) startContainerd(ctx context.Context, p nodePaths, b nodeBinaries) error {
	if _, err := e.startExec("containerd", b.containerd, []string{"--config", p.join("containerd.toml")},
		"PATH="+b.shimDir+":"+os.Getenv("PATH")); err != nil {
		return err
	}
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if c, err := net.Dial("unix", p.socket()); err == nil {
			c.Close()
			return nil
		}
		if pid, err := readPID(filepath.Join(e.Dir, "pids", "containerd")); err == nil && !alive(pid) {
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return fmt.Errorf("containerd did not answer on %s; last log lines:\n%s", p.socket(),
		logTail(filepath.Join(e.Dir, "logs", "containerd.log"), 20))
}
