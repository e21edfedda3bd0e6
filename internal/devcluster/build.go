package devcluster

import (
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

//go:generate bash pins/gen.sh

// pins holds copies of the tool modules under tools/ (go.mod and go.sum of each); their hash
// names the cache directory, so changing a pin builds anew and never mixes versions. The
// cluster's own tools share one directory; each tool marked own has a directory of its own.
//
//go:embed pins/*.mod pins/*.sum
var pins embed.FS

// registryLeanMain is tools/registry/lean/main.go (copied by pins/gen.sh): the dev
// registry's main, distribution's handlers without its per-request tracing and access log.
//
//go:embed pins/registry-lean.go.txt
var registryLeanMain []byte

// registryBin names the dev registry's binary after its main's content, so that a changed
// main is built anew while the cluster's key (its pins) and so its other binaries stay.
var registryBin = func() string {
	h := sha256.Sum256(registryLeanMain)
	return "registry-lean-" + hex.EncodeToString(h[:4])
}()

// KubeVersion is the Kubernetes version the dev cluster runs.
const KubeVersion = "v1.37.2"

// tool is one module of pins and the binaries built from it.
type tool struct {
	module  string   // pins/<module>.mod
	from    string   // the pinned module and version, for messages; a test checks it against pins
	pkgs    []string // main packages, built into bin/
	bins    []string // the resulting binary names
	ldflags string
	// src holds files written into the tool's module before the build (path → content): a
	// main of slipway's own.
	src map[string][]byte
	// own tools are cached under a key of their own pins (dev/<module>-<hash>): adding or
	// bumping one never invalidates the cluster's tools (Kubernetes alone builds for about 18
	// minutes on 2 cores), and bumping those never rebuilds it.
	own bool
	// node tools are the real node's parts (realnode.go): built when dev up starts the node,
	// not with the cluster's tools nor the publishing parts.
	node bool
	// spire tools are the SPIRE parts (spire.go): built only when dev up is asked for them
	// (--spire), not with the publishing parts.
	spire bool
	// secrets tools are built only for dev up --secrets (vault.go), not with the publishing
	// parts.
	secrets bool
	// central tools are built only for dev up --central (s3.go).
	central bool
	tags    string // build tags, comma-separated
	cgo     bool   // CGO_ENABLED=1 (runc's seccomp binds libseccomp)
	// prepare, when set, runs in the tool's module directory after its go.mod is written and
	// before anything is built: it lays out what the pins point to (vault's patched sdk).
	prepare func(ctx context.Context, src string) error
}

// kubeLdflags stamp the Kubernetes version into its binaries: without it the server reports
// v0.0.0-master and clients that check the server version misbehave.
const kubeLdflags = "-s -w" +
	" -X k8s.io/component-base/version.gitVersion=" + KubeVersion +
	" -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=37" +
	" -X k8s.io/component-base/version.gitTreeState=clean" +
	" -X k8s.io/client-go/pkg/version.gitVersion=" + KubeVersion +
	" -X k8s.io/client-go/pkg/version.gitMajor=1 -X k8s.io/client-go/pkg/version.gitMinor=37"

var tools = append([]tool{
	{
		module: "kube",
		from:   "k8s.io/kubernetes " + KubeVersion,
		pkgs: []string{"k8s.io/kubernetes/cmd/kube-apiserver", "k8s.io/kubernetes/cmd/kube-controller-manager",
			"k8s.io/kubernetes/cmd/kube-scheduler", "k8s.io/kubernetes/cmd/kubectl"},
		bins:    []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl"},
		ldflags: kubeLdflags,
	},
	{module: "etcd", from: "go.etcd.io/etcd/server/v3 v3.6.16", pkgs: []string{"go.etcd.io/etcd/server/v3"}, bins: []string{"etcd"}, ldflags: "-s -w"},
	{module: "kwok", from: "sigs.k8s.io/kwok v0.8.0", pkgs: []string{"sigs.k8s.io/kwok/cmd/kwok"}, bins: []string{"kwok"}, ldflags: "-s -w"},
	{module: "registry", from: "github.com/distribution/distribution/v3 v3.1.2", pkgs: []string{"./" + registryBin}, bins: []string{registryBin}, ldflags: "-s -w",
		src: map[string][]byte{registryBin + "/main.go": registryLeanMain}},
	{module: "metallb", from: "go.universe.tf/metallb v0.15.2", pkgs: []string{"go.universe.tf/metallb/controller"}, bins: []string{"metallb-controller"}, ldflags: "-s -w", own: true},
	{module: "envoy-gateway", from: "github.com/envoyproxy/gateway v1.9.1", pkgs: []string{"github.com/envoyproxy/gateway/cmd/envoy-gateway"}, bins: []string{"envoy-gateway"}, ldflags: "-s -w", own: true},
}, slices.Concat(nodeTools, spireTools, []tool{vaultTool, s3Tool})...)

// pinsHash is a short digest of the pinned go.mod and go.sum of the modules keep selects, in
// the order of the embedded directory (the order the key was first computed in).
func pinsHash(keep func(module string) bool) (string, error) {
	h := sha256.New()
	entries, err := pins.ReadDir("pins")
	if err != nil {
		return "", err
	}
	for _, e := range entries {
		if !keep(strings.TrimSuffix(strings.TrimSuffix(e.Name(), ".mod"), ".sum")) {
			continue
		}
		b, err := pins.ReadFile("pins/" + e.Name())
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s\x00%d\x00", e.Name(), len(b))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))[:12], nil
}

// sharedModule reports whether module is one of the cluster's tools, cached together.
func sharedModule(module string) bool {
	for _, t := range tools {
		if t.module == module {
			return !t.own
		}
	}
	return false
}

// cacheBase is $XDG_CACHE_HOME/slipway/dev (default ~/.cache).
func cacheBase() (string, error) {
	base := os.Getenv("XDG_CACHE_HOME")
	if base == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("cache directory: %w", err)
		}
		base = filepath.Join(home, ".cache")
	}
	return filepath.Join(base, "slipway", "dev"), nil
}

// CacheDir is the cache of the cluster's own tools: <cacheBase>/<Kubernetes version>-<pins>.
func CacheDir() (string, error) {
	base, err := cacheBase()
	if err != nil {
		return "", err
	}
	p, err := pinsHash(sharedModule)
	if err != nil {
		return "", err
	}
	return filepath.Join(base, KubeVersion+"-"+p), nil
}

// toolCacheDir is where t is built and cached: CacheDir for the cluster's tools,
// <cacheBase>/<module>-<its pins> for a tool of its own.
func toolCacheDir(t tool) (string, error) {
	if !t.own {
		return CacheDir()
	}
	base, err := cacheBase()
	if err != nil {
		return "", err
	}
	p, err := pinsHash(func(m string) bool { return m == t.module })
	if err != nil {
		return "", err
	}
	return filepath.Join(base, t.module+"-"+p), nil
}

// EnsureBinaries builds every binary of the cluster's own tools missing from the cache and
// returns their bin dir. Progress goes to progress; a failed build returns an error with the
// tail of its output.
func EnsureBinaries(ctx context.Context, progress io.Writer) (string, error) {
	var shared []tool
	for _, t := range tools {
		if !t.own {
			shared = append(shared, t)
		}
	}
	cache, err := CacheDir()
	if err != nil {
		return "", err
	}
	return ensureBuilt(ctx, cache, shared, progress)
}

// ensureTool builds the tool of module when missing and returns the path of its binary
// (its first) and its cache directory.
func ensureTool(ctx context.Context, module string, progress io.Writer) (bin, cache string, err error) {
	for _, t := range tools {
		if t.module != module || !t.own {
			continue
		}
		if cache, err = toolCacheDir(t); err != nil {
			return "", "", err
		}
		dir, err := ensureBuilt(ctx, cache, []tool{t}, progress)
		if err != nil {
			return "", "", err
		}
		return filepath.Join(dir, t.bins[0]), cache, nil
	}
	return "", "", fmt.Errorf("dev cluster: no tool module %q", module)
}

// ensureBuilt builds the tools of ts missing from cache/bin and returns that bin dir.
func ensureBuilt(ctx context.Context, cache string, ts []tool, progress io.Writer) (string, error) {
	if progress == nil {
		progress = io.Discard
	}
	bin := filepath.Join(cache, "bin")
	var todo []tool
	for _, t := range ts {
		for _, b := range t.bins {
			if _, err := os.Stat(filepath.Join(bin, b)); err != nil {
				todo = append(todo, t)
				break
			}
		}
	}
	if len(todo) == 0 {
		return bin, nil
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("dev cluster: building its binaries needs the Go toolchain (Go 1.26 or newer) on PATH: %w", err)
	}
	// One build at a time and a lock file, so two dev ups (or test binaries) never build into
	// the same directory at once.
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return "", fmt.Errorf("dev cluster: cache %s: %w", cache, err)
	}
	unlock, err := lockFile(ctx, filepath.Join(cache, "build.lock"))
	if err != nil {
		return "", err
	}
	defer unlock()
	for _, t := range todo {
		if err := buildTool(ctx, goBin, cache, bin, t, progress); err != nil {
			return "", err
		}
	}
	return bin, nil
}

func buildTool(ctx context.Context, goBin, cache, bin string, t tool, progress io.Writer) error {
	done := true
	for _, b := range t.bins {
		if _, err := os.Stat(filepath.Join(bin, b)); err != nil {
			done = false
		}
	}
	if done { // built by another process while we waited for the lock
		return nil
	}
	src := filepath.Join(cache, "src", t.module)
	if err := writeModule(src, t); err != nil {
		return err
	}
	if t.prepare != nil {
		if err := t.prepare(ctx, src); err != nil {
			return fmt.Errorf("dev cluster: build of %s: %w", t.from, err)
		}
	}
	tmp := filepath.Join(cache, "bin.tmp-"+t.module)
	_ = os.RemoveAll(tmp)
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return err
	}
	fmt.Fprintf(progress, "dev: building %s from %s (once; cached in %s)\n", strings.Join(t.bins, ", "), t.from, bin)
	out := tmp + "/"
	if len(t.pkgs) == 1 { // name the binary: etcd's main package would be called "server"
		out = filepath.Join(tmp, t.bins[0])
	}
	env := buildEnv(t)
	start := time.Now()
	todo, err := stalePackages(ctx, goBin, src, env, t.pkgs)
	if err != nil {
		return fmt.Errorf("dev cluster: build of %s failed: %w", t.from, err)
	}
	fmt.Fprintf(progress, "dev:   %s: %d packages to compile\n", t.module, len(todo))
	args := append([]string{"build", "-v", "-trimpath", "-ldflags", t.ldflags, "-o", out}, t.pkgs...)
	cmd := exec.CommandContext(ctx, goBin, args...)
	cmd.Dir, cmd.Env = src, env
	pipe, err := cmd.StderrPipe()
	if err != nil {
		return err
	}
	cmd.Stdout = cmd.Stderr
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("dev cluster: build %s: %w", t.module, err)
	}
	tail := newTail(40)
	prog := newBuildProgress(t.module, todo, start)
	stop := prog.report(progress, 15*time.Second)
	scanBuild(pipe, prog, tail)
	err = cmd.Wait()
	stop()
	if err != nil {
		return fmt.Errorf("dev cluster: build of %s failed: %w; last output:\n%s", t.from, err, tail.String())
	}
	if err := os.MkdirAll(bin, 0o755); err != nil {
		return err
	}
	for _, b := range t.bins {
		if err := os.Rename(filepath.Join(tmp, b), filepath.Join(bin, b)); err != nil {
			return fmt.Errorf("dev cluster: build of %s: %w", t.from, err)
		}
	}
	_ = os.RemoveAll(tmp)
	fmt.Fprintf(progress, "dev: built %s in %s\n", strings.Join(t.bins, ", "), time.Since(start).Round(time.Second))
	return nil
}

// tailBuf keeps the last n lines of a stream.
type tailBuf struct {
	n     int
	lines []string
}

func newTail(n int) *tailBuf { return &tailBuf{n: n} }

func (t *tailBuf) add(s string) {
	t.lines = append(t.lines, s)
	if len(t.lines) > t.n {
		t.lines = t.lines[len(t.lines)-t.n:]
	}
}

func (t *tailBuf) String() string { return strings.Join(t.lines, "\n") }

// writeModule writes t's module (its pinned go.mod and go.sum, and its files of slipway's own)
// into dir.
func writeModule(dir string, t tool) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, ext := range []string{"mod", "sum"} {
		b, err := pins.ReadFile("pins/" + t.module + "." + ext)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, "go."+ext), b, 0o644); err != nil {
			return err
		}
	}
	for name, b := range t.src {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// buildEnv is the environment of t's go commands: its tags and cgo decide which packages, and
// so which modules, it needs.
func buildEnv(t tool) []string {
	env := append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod", "CGO_ENABLED=0")
	if t.tags != "" {
		env = append(env, "GOFLAGS=-mod=mod -tags="+t.tags)
	}
	if t.cgo {
		env = append(env, "CGO_ENABLED=1")
	}
	return env
}
