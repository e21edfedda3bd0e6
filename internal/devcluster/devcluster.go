// Package devcluster runs the development cluster of SPEC §10 on loopback: etcd,
// kube-apiserver, kube-controller-manager and kube-scheduler built once from their Go modules at
// pinned versions (tools/*), kwok simulating nodes, pods and volumes, and a CNCF Distribution
// registry. It assumes a Linux host with the Go toolchain on PATH for the first build, and that
// only one dev cluster runs per data directory; its processes outlive the command that started
// them and are found again through the PID files in that directory.
package devcluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Env describes a running dev cluster.
type Env struct {
	Dir        string         `json:"dir"`        // data directory: pki, logs, pids, etcd and registry data
	BinDir     string         `json:"binDir"`     // the cached binaries, kubectl among them
	Kubeconfig string         `json:"kubeconfig"` // admin kubeconfig
	Server     string         `json:"server"`     // https://127.0.0.1:PORT
	Registry   string         `json:"registry"`   // 127.0.0.1:PORT, plain HTTP
	Ports      map[string]int `json:"ports"`
	Started    time.Time      `json:"started"`
	// FeatureGates the API server runs with (Options.FeatureGates), e.g. ContainerStopSignals=true.
	FeatureGates []string `json:"featureGates,omitempty"`
}

// components in start order; Down stops them in reverse.
var components = []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok", "registry"}

// Nodes are the simulated nodes dev up creates.
var Nodes = []string{"kwok-node-0", "kwok-node-1", "kwok-node-2"}

// DefaultDir is $SLIPWAY_DEV_DIR, else $XDG_STATE_HOME/slipway/dev (default ~/.local/state).
func DefaultDir() (string, error) {
	if d := os.Getenv("SLIPWAY_DEV_DIR"); d != "" {
		return filepath.Abs(d)
	}
	base := os.Getenv("XDG_STATE_HOME")
	if base == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("dev cluster: data directory: %w", err)
		}
		base = filepath.Join(home, ".local", "state")
	}
	return filepath.Join(base, "slipway", "dev"), nil
}

// Exports is the shell text that points slipway, kubectl and client-go at the cluster.
func (e *Env) Exports() string {
	return fmt.Sprintf("export KUBE_CONFIG_PATH=%s KUBECONFIG=%s K8S_REGISTRY=%s PATH=%s:$PATH\n",
		e.Kubeconfig, e.Kubeconfig, e.Registry, e.BinDir)
}

// Kubectl is the path of the kubectl that matches the server.
func (e *Env) Kubectl() string { return filepath.Join(e.BinDir, "kubectl") }

// ErrNotRunning is returned by Load and Down when no dev cluster runs in the directory.
var ErrNotRunning = errors.New("no dev cluster is running")

// Load finds the cluster running in dir and checks that it answers.
func Load(ctx context.Context, dir string) (*Env, error) {
	b, err := os.ReadFile(filepath.Join(dir, "cluster.json"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, ErrNotRunning
	}
	if err != nil {
		return nil, fmt.Errorf("dev cluster: %w", err)
	}
	var e Env
	if err := json.Unmarshal(b, &e); err != nil {
		return nil, fmt.Errorf("dev cluster: %s: %w", filepath.Join(dir, "cluster.json"), err)
	}
	for _, c := range components {
		pid, err := readPID(filepath.Join(dir, "pids", c))
		if err != nil || !alive(pid) || !ourProcess(pid, e.BinDir) {
			return &e, fmt.Errorf("dev cluster in %s: %s is not running: %w", dir, c, ErrNotRunning)
		}
	}
	if err := e.healthy(ctx); err != nil {
		return &e, fmt.Errorf("dev cluster in %s: %w", dir, err)
	}
	return &e, nil
}

// Options of Up.
type Options struct {
	Dir      string    // data directory; DefaultDir() when empty
	Progress io.Writer // progress lines; io.Discard when nil
	// FeatureGates are passed to kube-apiserver as --feature-gates, each Name=true or
	// Name=false: an alpha feature (ContainerStopSignals in 1.37) is off unless set here.
	FeatureGates []string
}

// Up starts the dev cluster in opts.Dir, or finds it running there (running = true).
func Up(ctx context.Context, opts Options) (env *Env, running bool, err error) {
	if opts.Progress == nil {
		opts.Progress = io.Discard
	}
	if opts.Dir == "" {
		if opts.Dir, err = DefaultDir(); err != nil {
			return nil, false, err
		}
	}
	if err := checkFeatureGates(opts.FeatureGates); err != nil {
		return nil, false, err
	}
	if err := os.MkdirAll(filepath.Dir(opts.Dir), 0o755); err != nil {
		return nil, false, fmt.Errorf("dev cluster: %w", err)
	}
	unlock, err := lockFile(ctx, opts.Dir+".lock")
	if err != nil {
		return nil, false, err
	}
	defer unlock()
	if e, err := Load(ctx, opts.Dir); err == nil {
		if opts.FeatureGates != nil && !slices.Equal(e.FeatureGates, opts.FeatureGates) {
			return nil, false, fmt.Errorf("dev cluster in %s runs with feature gates %q, not %q: stop it (slipway dev down) or use another --dir",
				opts.Dir, e.FeatureGates, opts.FeatureGates)
		}
		return e, true, nil
	} else if !errors.Is(err, ErrNotRunning) {
		fmt.Fprintf(opts.Progress, "dev: %v; starting anew\n", err)
	}
	// Whatever is left of an earlier cluster goes: a half-dead one cannot be trusted.
	if _, err := stopAll(opts.Dir); err != nil && !errors.Is(err, ErrNotRunning) {
		return nil, false, err
	}
	if err := os.RemoveAll(opts.Dir); err != nil {
		return nil, false, fmt.Errorf("dev cluster: clear %s: %w", opts.Dir, err)
	}
	bin, err := EnsureBinaries(ctx, opts.Progress)
	if err != nil {
		return nil, false, err
	}
	cache, _ := CacheDir()
	stages, err := ensureStages(ctx, cache)
	if err != nil {
		return nil, false, err
	}
	e := &Env{Dir: opts.Dir, BinDir: bin, Started: time.Now().UTC(), FeatureGates: opts.FeatureGates}
	if err := e.start(ctx, stages, opts.Progress); err != nil {
		// Leave nothing half-started behind.
		_, _ = stopAll(opts.Dir)
		return nil, false, err
	}
	return e, false, nil
}

func (e *Env) start(ctx context.Context, stagesDir string, progress io.Writer) error {
	start := time.Now()
	for _, d := range []string{"pids", "logs", "etcd", "registry"} {
		if err := os.MkdirAll(filepath.Join(e.Dir, d), 0o755); err != nil {
			return fmt.Errorf("dev cluster: %w", err)
		}
	}
	if err := writePKI(e.Dir); err != nil {
		return fmt.Errorf("dev cluster: certificates: %w", err)
	}
	p, err := freePorts(4)
	if err != nil {
		return err
	}
	e.Ports = map[string]int{"etcd": p[0], "etcd-peer": p[1], "kube-apiserver": p[2], "registry": p[3]}
	e.Server = fmt.Sprintf("https://127.0.0.1:%d", e.Ports["kube-apiserver"])
	e.Registry = fmt.Sprintf("127.0.0.1:%d", e.Ports["registry"])
	pki := func(n string) string { return filepath.Join(e.Dir, "pki", n) }
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
	if _, err := e.startProcess("kube-apiserver", append(featureGateArgs(e.FeatureGates),
		"--etcd-servers="+etcdURL,
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
		// The kubernetes Service would point at a loopback address, which the reconciler refuses.
		"--endpoint-reconciler-type=none",
		"--secure-port="+strconv.Itoa(e.Ports["kube-apiserver"]),
		"--tls-cert-file="+pki("apiserver.crt"), "--tls-private-key-file="+pki("apiserver.key"),
		"--client-ca-file="+pki("ca.crt"),
		"--service-account-key-file="+pki("sa.pub"), "--service-account-signing-key-file="+pki("sa.key"),
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--authorization-mode=Node,RBAC", "--allow-privileged=true",
		"--service-cluster-ip-range=10.96.0.0/16",
		"--max-requests-inflight=2000", "--max-mutating-requests-inflight=1000",
		"--profiling=false", "--v=0",
	)); err != nil {
		return err
	}
	if err := e.waitHTTP(ctx, "kube-apiserver", e.Server+"/readyz", 90*time.Second); err != nil {
		return err
	}
	if e.Kubeconfig, err = writeKubeconfig(e.Dir, e.Server); err != nil {
		return fmt.Errorf("dev cluster: kubeconfig: %w", err)
	}

	fmt.Fprintln(progress, "dev: starting kube-controller-manager, kube-scheduler, kwok and the registry")
	if _, err := e.startProcess("kube-controller-manager", []string{
		"--kubeconfig=" + e.Kubeconfig, "--secure-port=0", "--leader-elect=false",
		"--service-account-private-key-file=" + pki("sa.key"), "--root-ca-file=" + pki("ca.crt"),
		"--use-service-account-credentials=false", "--controllers=*,-nodeipam",
		"--kube-api-qps=5000", "--kube-api-burst=10000",
		"--concurrent-deployment-syncs=20", "--concurrent-replicaset-syncs=20",
		"--concurrent-namespace-syncs=10", "--concurrent-gc-syncs=40", "--v=0",
	}); err != nil {
		return err
	}
	if _, err := e.startProcess("kube-scheduler", []string{
		"--kubeconfig=" + e.Kubeconfig, "--secure-port=0", "--leader-elect=false",
		"--kube-api-qps=5000", "--kube-api-burst=10000", "--v=0",
	}); err != nil {
		return err
	}
	cfg, err := kwokConfig(stagesDir)
	if err != nil {
		return err
	}
	kwokCfg := filepath.Join(e.Dir, "kwok.yaml")
	if err := os.WriteFile(kwokCfg, cfg, 0o644); err != nil {
		return err
	}
	if _, err := e.startProcess("kwok", []string{
		"--kubeconfig=" + e.Kubeconfig, "--config=" + kwokCfg, "--manage-all-nodes=true",
		"--node-lease-duration-seconds=40", "--cidr=10.0.0.1/16", "--server-address=127.0.0.1:0",
	}); err != nil {
		return err
	}
	regCfg := filepath.Join(e.Dir, "registry.yaml")
	if err := os.WriteFile(regCfg, []byte(fmt.Sprintf(`version: 0.1
log:
  level: warn
storage:
  filesystem:
    rootdirectory: %s
  delete:
    enabled: true
http:
  addr: %s
`, filepath.Join(e.Dir, "registry"), e.Registry)), 0o644); err != nil {
		return err
	}
	if _, err := e.startProcess("registry", []string{"serve", regCfg}, "OTEL_TRACES_EXPORTER=none", "OTEL_SDK_DISABLED=true"); err != nil {
		return err
	}

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
	b, err := json.MarshalIndent(e, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(e.Dir, "cluster.json"), b, 0o644); err != nil {
		return err
	}
	fmt.Fprintf(progress, "dev: ready in %s\n", time.Since(start).Round(100*time.Millisecond))
	return nil
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
				if strings.HasSuffix(l, "=True") {
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

// httpClient trusts the dev CA and presents the admin certificate.
func (e *Env) httpClient() (*http.Client, error) {
	tr := &http.Transport{}
	if b, err := os.ReadFile(filepath.Join(e.Dir, "pki", "ca.crt")); err == nil {
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(b)
		cert, err := tls.LoadX509KeyPair(filepath.Join(e.Dir, "pki", "admin.crt"), filepath.Join(e.Dir, "pki", "admin.key"))
		if err != nil {
			return nil, err
		}
		tr.TLSClientConfig = &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}}
	}
	return &http.Client{Transport: tr, Timeout: 5 * time.Second}, nil
}

// Get fetches path from the API server with the admin credential (e.g. /metrics).
func (e *Env) Get(ctx context.Context, path string) ([]byte, error) {
	c, err := e.httpClient()
	if err != nil {
		return nil, err
	}
	c.Timeout = 30 * time.Second
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.Server+path, nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", path, resp.Status)
	}
	return b, err
}

func (e *Env) waitHTTP(ctx context.Context, name, url string, limit time.Duration) error {
	c, err := e.httpClient()
	if err != nil {
		return err
	}
	deadline := time.Now().Add(limit)
	var last error
	for time.Now().Before(deadline) {
		pid, _ := readPID(filepath.Join(e.Dir, "pids", name))
		if pid > 0 && !alive(pid) {
			return fmt.Errorf("dev cluster: %s exited; last log lines:\n%s", name, logTail(filepath.Join(e.Dir, "logs", name+".log"), 20))
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := c.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = fmt.Errorf("%s", resp.Status)
		} else {
			last = err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	return fmt.Errorf("dev cluster: %s not ready after %s: %v; last log lines:\n%s", name, limit, last,
		logTail(filepath.Join(e.Dir, "logs", name+".log"), 20))
}

// healthy checks the API server and the registry.
func (e *Env) healthy(ctx context.Context) error {
	c, err := e.httpClient()
	if err != nil {
		return err
	}
	for _, u := range []string{e.Server + "/readyz", "http://" + e.Registry + "/v2/"} {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		resp, err := c.Do(req)
		if err != nil {
			return fmt.Errorf("%s: %w", u, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s: %s", u, resp.Status)
		}
	}
	return nil
}

func logTail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "(no log)"
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// Down stops the cluster in dir (DefaultDir() when empty) and removes its data. It returns
// ErrNotRunning when there was nothing to stop.
func Down(dir string) error {
	var err error
	if dir == "" {
		if dir, err = DefaultDir(); err != nil {
			return err
		}
	}
	unlock, err := lockFile(context.Background(), dir+".lock")
	if err != nil {
		return err
	}
	defer unlock()
	stopped, err := stopAll(dir)
	if err != nil && !errors.Is(err, ErrNotRunning) {
		return err
	}
	if rmErr := os.RemoveAll(dir); rmErr != nil {
		return fmt.Errorf("dev cluster: remove %s: %w", dir, rmErr)
	}
	if stopped == 0 {
		return ErrNotRunning
	}
	return nil
}

// stopAll stops every component recorded in dir/pids that still runs one of our binaries.
func stopAll(dir string) (int, error) {
	binDir := ""
	if b, err := os.ReadFile(filepath.Join(dir, "cluster.json")); err == nil {
		var e Env
		if json.Unmarshal(b, &e) == nil {
			binDir = e.BinDir
		}
	}
	if binDir == "" {
		if c, err := CacheDir(); err == nil {
			binDir = filepath.Join(c, "bin")
		}
	}
	stopped := 0
	for i := len(components) - 1; i >= 0; i-- {
		pidFile := filepath.Join(dir, "pids", components[i])
		pid, err := readPID(pidFile)
		if err != nil {
			continue
		}
		if alive(pid) && ourProcess(pid, binDir) {
			stopPID(pid, 10*time.Second)
			stopped++
		}
		_ = os.Remove(pidFile)
	}
	if stopped == 0 {
		return 0, ErrNotRunning
	}
	return stopped, nil
}
