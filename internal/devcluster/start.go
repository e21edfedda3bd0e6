package devcluster

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// start runs etcd, the Kubernetes components, kwok and the registry in order, each once the one
// before answers, then creates the bootstrap objects (nodes, StorageClass, RuntimeClass).
func (e *Env) start(ctx context.Context, stagesDir string, progress io.Writer) (err error) {
	start := time.Now()
	for _, d := range []string{"pids", "logs", "etcd", "registry"} {
		if err := os.MkdirAll(filepath.Join(e.Dir, d), 0o755); err != nil {
			return fmt.Errorf("dev cluster: %w", err)
		}
	}
	if err := e.saveHost(); err != nil {
		return err
	}
	if err := writePKI(e.Dir); err != nil {
		return fmt.Errorf("dev cluster: certificates: %w", err)
	}
	if err := ensureNodeCA(e.Dir); err != nil {
		return fmt.Errorf("dev cluster: certificates: %w", err)
	}
	p, err := freePorts(4)
	if err != nil {
		return err
	}
	e.Ports = map[string]int{"etcd": p[0], "etcd-peer": p[1], "kube-apiserver": p[2], "registry": p[3]}
	e.Server = fmt.Sprintf("https://127.0.0.1:%d", e.Ports["kube-apiserver"])
	e.Registry = fmt.Sprintf("127.0.0.1:%d", e.Ports["registry"])
	if err := e.startControlPlane(ctx, progress); err != nil {
		return err
	}
	fmt.Fprintln(progress, "dev: starting kube-controller-manager, kube-scheduler, kwok and the registry")
	if err := e.startWorkers(stagesDir); err != nil {
		return err
	}
	nodeCtx, cancelNode := context.WithCancel(ctx)
	waitRealNode := e.startRealNodeAsync(nodeCtx, e.node, progress)
	defer func() {
		if err != nil { // the node's start ends before the caller stops what was started
			cancelNode()
			_ = waitRealNode()
		}
		cancelNode()
	}()

	fmt.Fprintln(progress, "dev: creating nodes, the default StorageClass and the RuntimeClass systemd")
	if err := e.kubectlApply(ctx, bootstrapObjects()); err != nil {
		return err
	}
	if err := e.waitHTTP(ctx, "registry", "http://"+e.Registry+"/v2/", 30*time.Second); err != nil {
		return err
	}
	if err := e.waitNodes(ctx, 60*time.Second); err != nil {
		return err
	}
	if err := waitRealNode(); err != nil {
		return err
	}
	if err := e.save(); err != nil {
		return err
	}
	fmt.Fprintf(progress, "dev: ready in %s\n", time.Since(start).Round(100*time.Millisecond))
	return nil
}

// startControlPlane starts etcd and kube-apiserver, each once the one before answers, and
// writes the kubeconfig.
func (e *Env) startControlPlane(ctx context.Context, progress io.Writer) error {
	etcdURL := fmt.Sprintf("http://127.0.0.1:%d", e.Ports["etcd"])
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", e.Ports["etcd-peer"])

	fmt.Fprintln(progress, "dev: starting etcd")
	if _, err := e.startProcess("etcd", []string{
		"--name=dev", "--data-dir=" + filepath.Join(e.Dir, "etcd"),
		"--listen-client-urls=" + etcdURL, "--advertise-client-urls=" + etcdURL,
		"--listen-peer-urls=" + peerURL, "--initial-advertise-peer-urls=" + peerURL,
		"--initial-cluster=dev=" + peerURL, "--auto-compaction-retention=1",
		"--quota-backend-bytes=8589934592", "--unsafe-no-fsync", "--log-level=warn",
	}); err != nil {
		return err
	}
	if err := e.waitHTTP(ctx, "etcd", etcdURL+"/health", 30*time.Second); err != nil {
		return err
	}

	fmt.Fprintln(progress, "dev: starting kube-apiserver")
	if _, err := e.startProcess("kube-apiserver", e.apiserverArgs()); err != nil {
		return err
	}
	if err := e.waitHTTP(ctx, "kube-apiserver", e.Server+"/readyz", 90*time.Second); err != nil {
		return err
	}
	var err error
	if e.Kubeconfig, err = writeKubeconfig(e.Dir, e.Server); err != nil {
		return fmt.Errorf("dev cluster: kubeconfig: %w", err)
	}
	return nil
}

// apiserverArgs are kube-apiserver's flags. It trusts the cluster's CA and the real node's
// (client-ca.crt, ensureNodeCA) for clients, and reaches kubelets with a client certificate.
func (e *Env) apiserverArgs() []string {
	pki := func(n string) string { return filepath.Join(e.Dir, "pki", n) }
	etcdURL := fmt.Sprintf("http://127.0.0.1:%d", e.Ports["etcd"])
	return append(featureGateArgs(e.FeatureGates),
		"--etcd-servers="+etcdURL,
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
		// The kubernetes Service would point at a loopback address, which the reconciler refuses.
		"--endpoint-reconciler-type=none",
		"--secure-port="+strconv.Itoa(e.Ports["kube-apiserver"]),
		"--tls-cert-file="+pki("apiserver.crt"), "--tls-private-key-file="+pki("apiserver.key"),
		"--client-ca-file="+pki("client-ca.crt"),
		"--kubelet-client-certificate="+pki("kubelet-client.crt"), "--kubelet-client-key="+pki("kubelet-client.key"),
		"--service-account-key-file="+pki("sa.pub"), "--service-account-signing-key-file="+pki("sa.key"),
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--authorization-mode=Node,RBAC", "--allow-privileged=true",
		"--service-cluster-ip-range=10.96.0.0/16", "--service-node-port-range="+NodePortRange,
		"--max-requests-inflight=2000", "--max-mutating-requests-inflight=1000",
		"--profiling=false", "--v=0",
	)
}

// NodePortRange is the API server's node port range. A published node's Service is a
// LoadBalancer with externalTrafficPolicy Local: two node ports each (its port and the health
// check's), so the default 30000-32767 held 1,384 nodes and a 2,000-node group failed with
// "failed to allocate a nodePort: range is full" (issue 17). Nothing listens on these ports in
// the dev cluster (no kube-proxy); the range only bounds what the API server hands out.
const NodePortRange = "30000-39999"

// startWorkers starts what works against the API server: kube-controller-manager,
// kube-scheduler, kwok and the registry. The caller printed what it starts.
func (e *Env) startWorkers(stagesDir string) error {
	for _, w := range e.controllers() {
		if _, err := e.startProcess(w.name, w.args); err != nil {
			return err
		}
	}
	if err := e.startKwok(stagesDir); err != nil {
		return err
	}
	return e.startRegistry()
}

// controller is a component that keeps nothing of its own: ensureControllers restarts it on a
// running cluster when this slipway starts it with other flags.
type controller struct {
	name string
	args []string
}

// controllers are kube-controller-manager and kube-scheduler with their flags.
//
// The PV controller keeps its 15 s resync (--pvclaimbinder-sync-period): at 2 s or 5 s the
// tail of a 200-node first apply's claims was Bound no sooner (the PV controller binds one
// claim at a time, and that bounds it), and every resync costs the controller manager CPU for
// each claim and volume: 2.07 s of its CPU fell within one 5.6 s plan of a 2,000-node group
// at 5 s (issue 17, run 8).
func (e *Env) controllers() []controller {
	pki := func(n string) string { return filepath.Join(e.Dir, "pki", n) }
	return []controller{
		{"kube-controller-manager", []string{
			"--kubeconfig=" + e.Kubeconfig, "--secure-port=0", "--leader-elect=false",
			"--service-account-private-key-file=" + pki("sa.key"), "--root-ca-file=" + pki("ca.crt"),
			"--use-service-account-credentials=false", "--controllers=*,-nodeipam",
			"--kube-api-qps=5000", "--kube-api-burst=10000",
			"--concurrent-deployment-syncs=20", "--concurrent-replicaset-syncs=20",
			"--concurrent-namespace-syncs=10", "--concurrent-gc-syncs=40",
			"--v=0",
		}},
		{"kube-scheduler", []string{
			"--kubeconfig=" + e.Kubeconfig, "--secure-port=0", "--leader-elect=false",
			"--kube-api-qps=5000", "--kube-api-burst=10000", "--v=0",
		}},
	}
}

// kwokConfigFile is kwok's configuration in the data directory. kwok.yaml beside it holds what
// a slipway older than the real node writes there (volumes under legacyVolumesDir): such a
// slipway (a test binary of an older checkout, reusing the running cluster) compares kwok.yaml
// with its own and, finding them equal, leaves kwok alone, where it would restart it with
// --manage-all-nodes, which takes over the real node and fakes its pods' statuses.
const (
	kwokConfigFile   = "kwok-stages.yaml"
	legacyVolumesDir = "/tmp/kwok-local-path-provisioner"
)

func (e *Env) startKwok(stagesDir string) error {
	for file, volumes := range map[string]string{kwokConfigFile: e.volumesDir(), "kwok.yaml": legacyVolumesDir} {
		cfg, err := kwokConfig(stagesDir, volumes)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(e.Dir, file), cfg, 0o644); err != nil {
			return err
		}
	}
	if _, err := e.startProcess("kwok", e.kwokArgs()); err != nil {
		return err
	}
	return nil
}

// kwokArgs are kwok's flags. kwok manages only the nodes annotated as its own: with
// --manage-all-nodes it took the real node's lease and status within a second of its
// registration and wrote fake statuses (Running, a kwok IP) for its pods while their
// containers were still being created.
func (e *Env) kwokArgs() []string {
	return []string{
		"--kubeconfig=" + e.Kubeconfig, "--config=" + filepath.Join(e.Dir, kwokConfigFile),
		"--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake",
		"--node-lease-duration-seconds=40", "--cidr=10.0.0.1/16", "--server-address=127.0.0.1:0",
	}
}

// startRegistry runs CNCF Distribution on the filesystem, from the dev cluster's own main
// (tools/registry/lean: no per-request tracing or access log). Its blob descriptors are cached
// in memory, as a registry in production keeps them (in memory or Redis): a plan HEADs every
// node's tag, and at 1,000 nodes the registry spent 0.41 s of CPU on those HEADs without the
// cache, 0.33 s with it, on the cores slipway shares (issue 17).
//
// The cache holds 100,000 descriptors rather than distribution's 10,000: it keeps two per blob
// (the registry's and the repository's), a node's image has three blobs, and a 2,000-node group
// alone needs 12,000.
func (e *Env) startRegistry() error {
	if err := os.WriteFile(filepath.Join(e.Dir, "registry.yaml"), e.registryConfig(), 0o644); err != nil {
		return err
	}
	if _, err := e.startExec("registry", filepath.Join(e.BinDir, registryBin), []string{"serve", filepath.Join(e.Dir, "registry.yaml")}); err != nil {
		return err
	}
	return nil
}

// registryConfig is the registry's configuration file.
func (e *Env) registryConfig() []byte {
	return []byte(fmt.Sprintf(`version: 0.1
log:
  level: warn
storage:
  filesystem:
    rootdirectory: %s
  cache:
    blobdescriptor: inmemory
    blobdescriptorsize: 100000
  delete:
    enabled: true
http:
  addr: %s
`, filepath.Join(e.Dir, "registry"), e.Registry))
}

func bootstrapObjects() string {
	var b strings.Builder
	b.WriteString(`apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: kwok-volume
  annotations:
    storageclass.kubernetes.io/is-default-class: "true"
provisioner: kwok.x-k8s.io/volume
reclaimPolicy: Delete
volumeBindingMode: Immediate
---
apiVersion: node.k8s.io/v1
kind: RuntimeClass
metadata:
  name: systemd
handler: systemd
`)
	for _, n := range Nodes {
		fmt.Fprintf(&b, `---
apiVersion: v1
kind: Node
metadata:
  name: %[1]s
  annotations:
    kwok.x-k8s.io/node: fake
    node.alpha.kubernetes.io/ttl: "0"
  labels:
    kubernetes.io/hostname: %[1]s
    kubernetes.io/os: linux
    kubernetes.io/arch: amd64
    type: kwok
status:
  allocatable: {cpu: "1000", memory: 4Ti, pods: "2000"}
  capacity: {cpu: "1000", memory: 4Ti, pods: "2000"}
`, n)
	}
	return b.String()
}

// kubectlApply applies manifests with the cluster's own kubectl (this package stays free of
// client-go, which only internal/kube imports).
func (e *Env) kubectlApply(ctx context.Context, manifests string) error {
	cmd := exec.CommandContext(ctx, e.Kubectl(), "--kubeconfig", e.Kubeconfig, "apply", "--server-side", "-f", "-")
	cmd.Stdin = strings.NewReader(manifests)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("dev cluster: kubectl apply: %w: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

func (e *Env) waitNodes(ctx context.Context, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	var last string
	for time.Now().Before(deadline) {
		cmd := exec.CommandContext(ctx, e.Kubectl(), "--kubeconfig", e.Kubeconfig, "get", "nodes", "-o",
			`jsonpath={range .items[*]}{.metadata.name}={.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}`)
		out, err := cmd.Output()
		if err == nil {
			ready := 0
			for _, l := range strings.Fields(string(out)) {
				// The kwok nodes: the real node is waited for on its own (waitNodeReady).
				if name, ok := strings.CutSuffix(l, "=True"); ok && slices.Contains(Nodes, name) {
					ready++
				}
			}
			if ready == len(Nodes) {
				return nil
			}
			last = strings.Join(strings.Fields(string(out)), " ")
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(300 * time.Millisecond):
		}
	}
	return fmt.Errorf("dev cluster: nodes not Ready after %s (%s); see %s", limit, last, filepath.Join(e.Dir, "logs", "kwok.log"))
}
