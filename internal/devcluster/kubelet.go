package devcluster

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// The real node's kubelet ports in slot 0 (hostshare.go); another slot's are apart.
const (
	KubeletPort        = 10250
	KubeletHealthzPort = 10248
)

// RealNodeLabel is the real node's label and taint key: only a pod that tolerates the taint
// lands there, and the kwok nodes keep everything else.
const RealNodeLabel = "slipway.dev/real-node"

// kubeletConfig is the real node's KubeletConfiguration. The kubelet listens on addr (the
// loopback address its node's host name resolves to: the API server dials a node's Hostname
// address first) with a serving certificate of the dev CA's node branch; it authenticates
// callers by client certificate (the API server's) or a token the API server reviews, asks
// the API server to authorize them, and lets no anonymous caller in. failCgroupV1: false
// runs it on a cgroup v1 host (deprecated; KEP-5573 will remove it).
func kubeletConfig(p nodePaths, pki func(string) string, addr string, share HostShare, gates []string) string {
	var fg strings.Builder
	if len(gates) > 0 {
		names := append([]string(nil), gates...)
		sort.Strings(names)
		fg.WriteString("featureGates:\n")
		for _, g := range names {
			n, v, _ := strings.Cut(g, "=")
			fmt.Fprintf(&fg, "  %s: %s\n", n, v)
		}
	}
	return fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: %s
port: %d
healthzBindAddress: 127.0.0.1
healthzPort: %d
readOnlyPort: 0
tlsCertFile: %s
tlsPrivateKeyFile: %s
authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: true
  x509:
    clientCAFile: %s
authorization:
  mode: Webhook
cgroupDriver: cgroupfs
failCgroupV1: false
failSwapOn: false
containerRuntimeEndpoint: unix://%s
podLogsDir: %s
registerWithTaints:
- key: %s
  value: "true"
  effect: NoSchedule
evictionHard:
  memory.available: 100Mi
  nodefs.available: 1%%
  nodefs.inodesFree: 1%%
  imagefs.available: 1%%
imageGCHighThresholdPercent: 95
imageGCLowThresholdPercent: 90
%s%s`, addr, share.KubeletPort, share.HealthzPort, pki("kubelet-serving.crt"), pki("kubelet-serving.key"),
		pki("node-ca.crt"), p.socket(), p.join("pod-logs"), RealNodeLabel, cgroupRootLine(share), fg.String())
}

// cgroupRootLine sets the kubelet's cgroupRoot outside slot 0, whose kubelet keeps the
// default (kubepods at the root of each hierarchy).
func cgroupRootLine(share HostShare) string {
	if share.CgroupRoot == "" || share.CgroupRoot == "/" {
		return ""
	}
	return "cgroupRoot: " + share.CgroupRoot + "\n"
}

// kubeletKubeconfig is the kubelet's credential: the node's client certificate
// (system:node:<name> in system:nodes), which the Node authorizer knows.
func kubeletKubeconfig(server string, pki func(string) string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: slipway-dev
  cluster:
    server: %s
    certificate-authority: %s
users:
- name: node
  user:
    client-certificate: %s
    client-key: %s
contexts:
- name: node
  context: {cluster: slipway-dev, user: node}
current-context: node
`, server, pki("ca.crt"), pki("node.crt"), pki("node.key"))
}

// kubeletArgs are the kubelet's flags.
func kubeletArgs(p nodePaths, name string) []string {
	return []string{
		"--config=" + p.join("kubelet.yaml"), "--kubeconfig=" + p.join("kubelet.kubeconfig"),
		"--root-dir=" + p.kubeletRoot(), "--cert-dir=" + p.join("kubelet-pki"),
		"--hostname-override=" + name, "--node-labels=" + RealNodeLabel + "=true", "--v=0",
	}
}

// startKubelet writes the kubelet's files and starts it.
func (e *Env) startKubelet(p nodePaths, b nodeBinaries, n realNodeHost) error {
	pki := func(f string) string { return filepath.Join(e.Dir, "pki", f) }
	files := map[string]string{
		p.join("kubelet.yaml"):       kubeletConfig(p, pki, n.addr.String(), *e.hostShare(), e.FeatureGates),
		p.join("kubelet.kubeconfig"): kubeletKubeconfig(e.Server, pki),
	}
	for path, content := range files {
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			return err
		}
	}
	_, err := e.startExec("kubelet", b.kubelet, kubeletArgs(p, n.name))
	return err
}

// waitNodeReady waits for node name to be Ready, the kubelet still running.
func (e *Env) waitNodeReady(ctx context.Context, name string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	last := "not registered"
	for time.Now().Before(deadline) {
		if pid, err := readPID(filepath.Join(e.Dir, "pids", "kubelet")); err != nil || !alive(pid) {
			return fmt.Errorf("kubelet exited; last log lines:\n%s", logTail(filepath.Join(e.Dir, "logs", "kubelet.log"), 20))
		}
		out, err := exec.CommandContext(ctx, e.Kubectl(), "--kubeconfig", e.Kubeconfig, "get", "node", name, "-o",
			`jsonpath={.status.conditions[?(@.type=="Ready")].status} {.status.conditions[?(@.type=="Ready")].message}`).Output()
		if err == nil {
			status, msg, _ := strings.Cut(string(out), " ")
			if status == "True" {
				return nil
			}
			last = "Ready " + strconv.Quote(status) + ": " + msg
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(300 * time.Millisecond):
		}
	}
	return fmt.Errorf("node %s not Ready after %s (%s); see %s", name, limit, last, filepath.Join(e.Dir, "logs", "kubelet.log"))
}
