package devcluster

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// The real node: beside the kwok nodes, dev up runs one node with a real kubelet, containerd
// and runc, so that what kwok only scripts (a runtime refusing a pod spec, a probe, a user
// namespace on a volume, a stop signal) happens for real. Its pods are real processes on this
// machine. It needs root, user namespaces and cgroups; where it cannot run, dev up says why,
// records it (Env.NoRealNode) and goes on with the kwok nodes alone. Its ports, bridge, pod
// range and cgroups are machine-wide: each environment takes them from its slot
// (hostshare.go), so a second environment's node runs beside the shared one's.

// realNodeHost is where the real node runs: its name (this machine's host name, which the
// API server dials first) and the loopback address that name resolves to, where the kubelet
// listens.
type realNodeHost struct {
	name string
	addr net.IP
}

// realNodePlan is what dev up found out before taking the cluster's lock: the node's host and
// binaries, or why it cannot run here.
type realNodePlan struct {
	host realNodeHost
	bins nodeBinaries
	why  string
}

// ownerFile names, machine-wide, the data directory whose dev cluster has the real node of
// slot 0 (hostshare.go): a slipway older than the slots reads it to find whose the bridge is.
func ownerFile() string { return filepath.Join(runDir, "real-node") }

// prepareRealNode checks that a real node can run here and builds its binaries (before the
// cluster's lock, as the publishing parts are: a running cluster stays usable meanwhile).
func prepareRealNode(ctx context.Context, dataDir string, share HostShare, progress io.Writer) *realNodePlan {
	p := &realNodePlan{}
	if p.why = hostProblem(); p.why != "" {
		return p
	}
	if p.host, p.why = nodeHost(); p.why != "" {
		return p
	}
	if !nodeRunning(dataDir) {
		if p.why = portsTaken(share, share.KubeletPort, share.HealthzPort); p.why != "" {
			return p
		}
	}
	var err error
	if p.bins, err = ensureNodeBinaries(ctx, progress); err != nil {
		p.why = err.Error()
	}
	return p
}

// hostProblem says why this machine cannot run a real node, "" when it can.
func hostProblem() string {
	if os.Geteuid() != 0 {
		return "not root: the kubelet and containerd mount file systems, make cgroups and a network bridge"
	}
	if b, err := os.ReadFile("/proc/sys/user/max_user_namespaces"); err != nil || strings.TrimSpace(string(b)) == "0" {
		return "no user namespaces (/proc/sys/user/max_user_namespaces is 0 or missing): every pod slipway renders has hostUsers: false"
	}
	if !cgroupsUsable() {
		return "no usable cgroups: /sys/fs/cgroup has neither cgroup v2 with the cpu and memory controllers nor the v1 cpu, memory and pids hierarchies"
	}
	if !cniPluginsPresent() {
		return "the CNI plugins bridge and host-local are not in " + strings.Join(cniBinDirs, " or ") + " (Debian: apt-get install containernetworking-plugins)"
	}
	if !nodeToolCached("runc") && !runcBuildable() {
		return "runc is built with cgo and seccomp: it needs gcc, pkg-config and libseccomp (Debian: apt-get install gcc pkg-config libseccomp-dev)"
	}
	return ""
}

// nodeHost is this machine's host name, which must resolve to a loopback address: the API
// server reaches a kubelet at its node's Hostname address, and the kubelet refuses a loopback
// node IP.
func nodeHost() (realNodeHost, string) {
	h, err := os.Hostname()
	if err != nil {
		return realNodeHost{}, "no host name: " + err.Error()
	}
	name := strings.ToLower(h)
	addrs, err := net.LookupIP(name)
	if err != nil {
		return realNodeHost{}, fmt.Sprintf("host name %s does not resolve (%v): the API server reaches the kubelet at it", name, err)
	}
	for _, a := range addrs {
		if a.IsLoopback() && a.To4() != nil {
			return realNodeHost{name: name, addr: a}, ""
		}
	}
	return realNodeHost{}, fmt.Sprintf("host name %s resolves to %v, no loopback address (map it to 127.0.0.1 in /etc/hosts): the kubelet listens on loopback only", name, addrs)
}

// portsTaken says which of the kubelet's ports (its slot's, share) another program holds, ""
// when they are free.
func portsTaken(share HostShare, ports ...int) string {
	for _, port := range ports {
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err == nil {
			l.Close()
			continue
		}
		return fmt.Sprintf("kubelet port %d on 127.0.0.1 (this environment's slot %d) is taken by another program", port, share.Slot)
	}
	return ""
}

// nodeRunning reports whether the real node of the cluster in dataDir runs: its containerd and
// kubelet from their recorded PIDs.
func nodeRunning(dataDir string) bool {
	for _, name := range []string{"containerd", "kubelet"} {
		pid, err := readPID(filepath.Join(dataDir, "pids", name))
		if err != nil || !alive(pid) || !runsBinary(pid, name) {
			return false
		}
	}
	return true
}

// ensureRealNode, on a running cluster, starts the real node when it is not running and
// records in cluster.json whether it runs. A node that fails to start is a warning: the
// cluster goes on without it, and the tests that need it fail with the reason.
func (e *Env) ensureRealNode(ctx context.Context, plan *realNodePlan, progress io.Writer) error {
	if plan == nil {
		return nil
	}
	if nodeRunning(e.Dir) {
		if plan.why == "" {
			if err := e.ensureReaper(plan.bins.volumes); err != nil {
				return err
			}
			if err := e.ensureContainerdConfig(ctx, plan, progress); err != nil {
				return err
			}
			// A node started by an older slipway has a bridge without a MAC of its own.
			if err := e.ensureBridge(); err != nil {
				return err
			}
		}
		return e.recordRealNode(plan.host.name, "")
	}
	if plan.why != "" {
		return e.recordNoRealNode(plan.why, progress)
	}
	if err := e.ensureAPIServer(ctx, progress); err != nil {
		return err
	}
	if err := e.startRealNode(ctx, plan, progress); err != nil {
		return e.failRealNode(err, progress)
	}
	return e.recordRealNode(plan.host.name, "")
}

// readyForRealNode restarts, on a running cluster about to get the real node, an API server
// without the kubelet client certificate, before anything else is restarted: a kwok restarted
// with new flags just before exited while it waited for the API server to answer.
func (e *Env) readyForRealNode(ctx context.Context, plan *realNodePlan, progress io.Writer) error {
	if plan == nil || plan.why != "" || nodeRunning(e.Dir) {
		return nil
	}
	return e.ensureAPIServer(ctx, progress)
}

// startRealNodeAsync starts the real node of a cluster being started, beside the rest of its
// start; the returned func waits for it and records the outcome.
func (e *Env) startRealNodeAsync(ctx context.Context, plan *realNodePlan, progress io.Writer) func() error {
	if plan == nil {
		return func() error { return nil }
	}
	if plan.why != "" {
		return func() error { return e.recordNoRealNode(plan.why, progress) }
	}
	done := make(chan error, 1)
	go func() { done <- e.startRealNode(ctx, plan, progress) }()
	return sync.OnceValue(func() error {
		if err := <-done; err != nil {
			return e.failRealNode(err, progress)
		}
		return e.recordRealNode(plan.host.name, "")
	})
}

// startRealNode starts containerd and the kubelet and waits for the node to be Ready.
func (e *Env) startRealNode(ctx context.Context, plan *realNodePlan, progress io.Writer) error {
	start := time.Now()
	h := plan.host
	fmt.Fprintf(progress, "dev: starting the real node %s (kubelet %s, containerd %s, runc %s)\n", h.name, KubeVersion, ContainerdVersion, RuncVersion)
	p := nodePaths{dir: nodeDirFor(e.Dir)}
	if err := writeNodeCerts(e.Dir, h.name, h.addr); err != nil {
		return fmt.Errorf("certificates: %w", err)
	}
	if err := e.kubectlApply(ctx, kubeletClientBinding()); err != nil {
		return err
	}
	if err := e.waitHTTP(ctx, "registry", "http://"+e.Registry+"/v2/", 30*time.Second); err != nil {
		return err
	}
	sandbox, err := pushPause(ctx, e.Registry, plan.bins.pause)
	if err != nil {
		return err
	}
	if err := e.writeContainerdFiles(p, plan.bins, sandbox); err != nil {
		return err
	}
	if err := saveIPForward(p); err != nil {
		return err
	}
	if err := os.WriteFile(p.join("node-name"), []byte(h.name+"\n"), 0o644); err != nil {
		return err
	}
	if err := e.claimNodeHost(p); err != nil {
		return err
	}
	if err := e.ensureBridge(); err != nil {
		return err
	}
	if err := e.ensureReaper(plan.bins.volumes); err != nil {
		return err
	}
	if err := e.startContainerd(ctx, p, plan.bins); err != nil {
		return err
	}
	if err := e.startKubelet(p, plan.bins, h); err != nil {
		return err
	}
	if err := e.waitNodeReady(ctx, h.name, 2*time.Minute); err != nil {
		return err
	}
	fmt.Fprintf(progress, "dev: real node %s Ready in %s\n", h.name, time.Since(start).Round(100*time.Millisecond))
	return nil
}

// failRealNode stops what a failed start left and records why there is no real node.
func (e *Env) failRealNode(err error, progress io.Writer) error {
	stopRealNode(e.Dir, e.Kubectl(), e.Kubeconfig, progress)
	return e.recordNoRealNode("it failed to start: "+err.Error(), progress)
}

func (e *Env) recordNoRealNode(why string, progress io.Writer) error {
	fmt.Fprintf(progress, "dev: no real node: %s; the kwok nodes run everything\n", why)
	return e.recordRealNode("", why)
}

// recordRealNode writes whether the real node runs (name) or why not into cluster.json.
func (e *Env) recordRealNode(name, why string) error {
	if e.RealNode == name && e.NoRealNode == why {
		return nil
	}
	e.RealNode, e.NoRealNode = name, why
	if _, err := os.Stat(filepath.Join(e.Dir, "cluster.json")); err != nil {
		return nil // a cluster being started saves it once ready
	}
	return e.save()
}

// realNodeExports is the line of Exports for the real node: its name, for tests and kubectl.
func (e *Env) realNodeExports() string {
	if e.RealNode == "" {
		return ""
	}
	return "export SLIPWAY_DEV_REAL_NODE=" + e.RealNode + "\n"
}

// kubeletClientBinding lets the API server's kubelet client (its certificate's user) use the
// kubelet's API, which the kubelet's webhook authorizer asks the API server about.
func kubeletClientBinding() string {
	return `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: slipway-dev:kube-apiserver-kubelet-client
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: system:kubelet-api-admin
subjects:
- apiGroup: rbac.authorization.k8s.io
  kind: User
  name: ` + kubeletClientUser + "\n"
}

// ensureAPIServer restarts, on a running cluster, an API server started without the kubelet
// client certificate (by a slipway older than the real node): etcd keeps every object and the
// address stays; clients see it gone for the seconds of its restart.
func (e *Env) ensureAPIServer(ctx context.Context, progress io.Writer) error {
	pid, ok := e.ourPID("kube-apiserver")
	if !ok {
		return nil
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || runsWith(b, e.apiserverArgs()) {
		return nil
	}
	if err := ensureNodeCA(e.Dir); err != nil {
		return fmt.Errorf("dev cluster: certificates: %w", err)
	}
	fmt.Fprintln(progress, "dev: restarting kube-apiserver with this slipway's flags (the real node's client certificates)")
	stopPID(pid, 30*time.Second)
	if _, err := e.startProcess("kube-apiserver", e.apiserverArgs()); err != nil {
		return err
	}
	return e.waitHTTP(ctx, "kube-apiserver", e.Server+"/readyz", 2*time.Minute)
}

// ensureContainerdConfig restarts the running node's containerd when its configuration (or a
// runtime's binary) is not this slipway's. Containers outlive the restart: their shims run on,
// and the kubelet reconnects.
func (e *Env) ensureContainerdConfig(ctx context.Context, plan *realNodePlan, progress io.Writer) error {
	p := nodePaths{dir: nodeDirFor(e.Dir)}
	want := containerdConfig(p, pauseRef(e.Registry))
	have, _ := os.ReadFile(p.join("containerd.toml"))
	link, _ := os.Readlink(p.join("bin", "runc-systemd"))
	if string(have) == want && link == plan.bins.runcSystemd {
		return nil
	}
	fmt.Fprintln(progress, "dev: restarting the real node's containerd with this slipway's configuration")
	if err := e.writeContainerdFiles(p, plan.bins, pauseRef(e.Registry)); err != nil {
		return err
	}
	if pid, err := readPID(filepath.Join(e.Dir, "pids", "containerd")); err == nil && alive(pid) && runsBinary(pid, "containerd") {
		stopPID(pid, 10*time.Second)
	}
	return e.startContainerd(ctx, p, plan.bins)
}

// shortHash is 12 hex digits of s's SHA-256.
func shortHash(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:6])
}
