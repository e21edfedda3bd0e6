// Package devcluster runs the development cluster of SPEC §10 on loopback: etcd,
// kube-apiserver, kube-controller-manager and kube-scheduler built once from their Go modules at
// pinned versions (tools/*), kwok simulating nodes, pods and volumes, and a CNCF Distribution
// registry, with the parts dev up adds (a real node, Knot DNS, publishing, SPIRE, a secrets
// server, PostgreSQL). Each part implements one interface (parts.go), and up, down and env
// walk the one list of them. It assumes a Linux host with the Go toolchain on PATH for the
// first build, and that only one dev cluster runs per data directory; its processes outlive
// the command that started them and are found again through the PID files in that directory.
// Several data directories run side by side: each holds a slot of the machine-wide names and
// ranges (hostshare.go), and dev down removes only what its own environment made.
package devcluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
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
	// DNSServer is Knot's address (127.0.0.1:PORT), TSIGSecretFile the file holding the
	// secret of TSIG key TSIGKey (0600).
	DNSServer      string `json:"dnsServer,omitempty"`
	TSIGSecretFile string `json:"tsigSecretFile,omitempty"`
	// Gateway is the <namespace>/<name> of the Programmed Gateway; empty without the
	// publishing parts (Options.Core).
	Gateway string `json:"gateway,omitempty"`
	// PublishingObjects is the digest of the MetalLB pools and Gateway objects last applied
	// (publishingDigest): a slipway whose objects differ applies its own on a running cluster.
	PublishingObjects string `json:"publishingObjects,omitempty"`
	// RealNode is the name of the real kubelet node (realnode.go), empty when there is none;
	// NoRealNode then says why (a test that needs the node fails with it).
	RealNode   string `json:"realNode,omitempty"`
	NoRealNode string `json:"noRealNode,omitempty"`
	// OpenBaoAddr is the secrets server's URL (vault.go; dev up --secrets), OpenBaoCAFile the
	// CA of its certificate, OpenBaoTokenFile the file (0600) holding its root token.
	OpenBaoAddr      string `json:"openbaoAddr,omitempty"`
	OpenBaoCAFile    string `json:"openbaoCAFile,omitempty"`
	OpenBaoTokenFile string `json:"openbaoTokenFile,omitempty"`
	// PostgresHost is where the dev PostgreSQL listens (postgres.go; dev up --central), and
	// PostgresPassFile the passfile (0600) with its admin's password.
	PostgresHost     string `json:"postgresHost,omitempty"`
	PostgresPassFile string `json:"postgresPassFile,omitempty"`
	// S3Host is where the dev S3 server listens (s3.go; dev up --central), and
	// S3CredentialsFile the file (0600) with its root key pair.
	S3Host            string `json:"s3Host,omitempty"`
	S3CredentialsFile string `json:"s3CredentialsFile,omitempty"`

	node *realNodePlan // the real node dev up starts with the cluster
	host *HostShare    // its share of the machine (hostshare.go), read once
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
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.exports(e))
	}
	return b.String()
}

// save writes e to cluster.json, which Load reads.
func (e *Env) save() error {
	b, err := json.MarshalIndent(e, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(e.Dir, "cluster.json"), b, 0o644); err != nil {
		return fmt.Errorf("dev cluster: %w", err)
	}
	return nil
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
	// Core starts only the Kubernetes cluster and the registry, without the publishing parts
	// (MetalLB, Envoy Gateway): Envoy Gateway binds fixed ports (8081, 18000), so only one
	// cluster per machine can have them.
	Core bool
	// NoRealNode starts no real kubelet node (realnode.go), e.g. where the machine cannot run
	// one or a second one is not needed.
	NoRealNode bool
	// Spire also starts the SPIRE parts (spire.go): a SPIRE server, its node's sshd and the
	// agent image, built the first time (about 8 minutes on 2 cores).
	Spire bool
	// Secrets also starts the secrets server (vault.go), building it the first time.
	Secrets bool
	// Central also starts PostgreSQL (postgres.go) and configures the secrets server's
	// database engine for it; it needs Secrets.
	Central bool
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
	share, err := claimHost(opts.Dir)
	if err != nil {
		return nil, false, err
	}
	bases := startBaseImages(ctx, &opts)
	defer startPrefetch(ctx, opts)()
	run := &upRun{opts: opts, share: share, bases: bases}
	if err := prepareParts(ctx, run); err != nil {
		return nil, false, err
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
		// A cluster a slipway older than the slots started gets its record now.
		if err := e.saveHost(); err != nil {
			return nil, false, err
		}
		// Parts added to the dev environment later start beside a running cluster.
		if err := ensureParts(ctx, e, run); err != nil {
			return nil, false, err
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
	if run.stages, err = ensureStages(ctx, cache); err != nil {
		return nil, false, err
	}
	run.fresh = true
	e := &Env{Dir: opts.Dir, BinDir: bin, Started: time.Now().UTC(), FeatureGates: opts.FeatureGates, node: run.node, host: &share}
	if err := ensureParts(ctx, e, run); err != nil {
		// Leave nothing half-started behind.
		_, _ = stopAll(opts.Dir)
		return nil, false, err
	}
	return e, false, nil
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
	h, _ := loadHost(dir)
	undoHostKinds(dir, io.Discard, madeBridge, madeLoAddr, madeCgroup, madeIPForward)
	releaseHost(dir, h)
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
	stopped := stopParts(dir, binDir)
	if stopped == 0 {
		return 0, ErrNotRunning
	}
	return stopped, nil
}
