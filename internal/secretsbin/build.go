package secretsbin

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"go/parser"
	"go/token"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

const (
	module  = "slipway.dev/slipway"
	mainPkg = "cmd/slipway-secrets"
)

// buildArgs are the flags of every build of the sidecar, on demand or by go generate: no path
// of this machine (-trimpath), no VCS stamp (a commit that leaves the sidecar alone must not
// change its bytes), no symbol table.
var buildArgs = []string{"build", "-trimpath", "-buildvcs=false", "-ldflags=-s -w"}

// fixedEnv fixes what else decides the bytes: no cgo, the baseline instruction sets, no
// workspace, the module's own go.mod and go.sum, no experiment.
var fixedEnv = []string{"CGO_ENABLED=0", "GOAMD64=v1", "GOARM64=v8.0", "GOWORK=off", "GOFLAGS=-mod=readonly", "GOEXPERIMENT="}

// buildEnv is the environment of a build for platform ("linux/arm64").
func buildEnv(platform string) []string {
	goos, goarch, _ := strings.Cut(platform, "/")
	return append(append(os.Environ(), fixedEnv...), "GOOS="+goos, "GOARCH="+goarch)
}

// sourceDir is the root of the module this binary was built from, when it is on this machine:
// the directory of this file as the compiler saw it (a build without -trimpath records it;
// `go run`, `go build` and `go install` record it), else the module holding the working
// directory.
func sourceDir() (string, error) {
	var tried []string
	if _, file, _, ok := runtime.Caller(0); ok && filepath.IsAbs(file) {
		dir := filepath.Dir(filepath.Dir(filepath.Dir(file))) // <root>/internal/secretsbin/build.go
		if isModuleRoot(dir) {
			return dir, nil
		}
		tried = append(tried, dir)
	}
	if wd, err := os.Getwd(); err == nil {
		for dir := wd; ; dir = filepath.Dir(dir) {
			if isModuleRoot(dir) {
				return dir, nil
			}
			if filepath.Dir(dir) == dir {
				break
			}
		}
		tried = append(tried, wd+" and its parents")
	}
	return "", fmt.Errorf("the source of module %s is not in %s (build slipway from its source without -trimpath, or run `go generate ./internal/secretsbin` before building it)", module, strings.Join(tried, " nor "))
}

// isModuleRoot reports whether dir holds slipway's go.mod and the sidecar's main package.
func isModuleRoot(dir string) bool {
	b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return false
	}
	first, _, _ := strings.Cut(string(b), "\n")
	if strings.TrimSpace(first) != "module "+module {
		return false
	}
	_, err = os.Stat(filepath.Join(dir, mainPkg, "main.go"))
	return err == nil
}

// builder builds the sidecar from the module in src.
type builder struct {
	src, goBin string
	key        string // hex digest of everything the build reads: see sourceKey
}

func newBuilder(ctx context.Context, src string) (*builder, error) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		return nil, fmt.Errorf("building it from %s needs the Go toolchain on PATH: %w", src, err)
	}
	b := &builder{src: src, goBin: goBin}
	cmd := exec.CommandContext(ctx, goBin, "env", "GOVERSION")
	cmd.Dir, cmd.Env = src, buildEnv(Platforms[0])
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go env GOVERSION in %s: %w", src, err)
	}
	if b.key, err = sourceKey(src, strings.TrimSpace(string(out))); err != nil {
		return nil, err
	}
	return b, nil
}

// sourceKey is the digest of what decides the programs' bytes: the Go version, the flags, the
// platforms, go.mod and go.sum (the versions of every other module, which go.sum pins), and
// the files of each of the module's own packages the sidecar imports, directly or not.
func sourceKey(src, goVersion string) (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "slipway-secrets key 1\n%s\n%q\n%q\n%q\n", goVersion, buildArgs, fixedEnv, Platforms)
	for _, f := range []string{"go.mod", "go.sum"} {
		if err := hashFile(h, src, f); err != nil {
			return "", err
		}
	}
	seen := map[string]bool{}
	todo := []string{mainPkg}
	for len(todo) > 0 {
		pkg := todo[0]
		todo = todo[1:]
		if seen[pkg] {
			continue
		}
		seen[pkg] = true
		imports, err := hashPackage(h, src, pkg)
		if err != nil {
			return "", err
		}
		todo = append(todo, imports...)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// hashPackage adds every file of the package directory pkg but its tests (Go files of any
// build tag, embedded files alike) to h, and returns the module's packages its Go files import.
func hashPackage(h io.Writer, src, pkg string) ([]string, error) {
	ents, err := os.ReadDir(filepath.Join(src, pkg))
	if err != nil {
		return nil, fmt.Errorf("the sidecar's source: %w", err)
	}
	var imports []string
	fset := token.NewFileSet()
	for _, e := range ents {
		name := e.Name()
		if !e.Type().IsRegular() || strings.HasSuffix(name, "_test.go") {
			continue
		}
		rel := filepath.ToSlash(filepath.Join(pkg, name))
		if err := hashFile(h, src, rel); err != nil {
			return nil, err
		}
		if !strings.HasSuffix(name, ".go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(src, rel), nil, parser.ImportsOnly)
		if err != nil {
			return nil, fmt.Errorf("the sidecar's source: %w", err)
		}
		for _, im := range f.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			if rest, ok := strings.CutPrefix(p, module+"/"); ok {
				imports = append(imports, rest)
			}
		}
	}
	slices.Sort(imports)
	return imports, nil
}

func hashFile(h io.Writer, src, rel string) error {
	b, err := os.ReadFile(filepath.Join(src, rel))
	if err != nil {
		return fmt.Errorf("the sidecar's source: %w", err)
	}
	sum := sha256.Sum256(b)
	fmt.Fprintf(h, "%s %x\n", rel, sum)
	return nil
}

// cacheDir is where the programs of key are kept: <user cache>/slipway/secrets-sidecar/<key>.
func cacheDir(key string) (string, error) {
	base, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("secrets sidecar: no cache directory: %w", err)
	}
	return filepath.Join(base, "slipway", "secrets-sidecar", key[:32]), nil
}

// programs returns the programs of b's key from the cache, building them first when missing.
func (b *builder) programs(ctx context.Context, progress io.Writer) (map[string][]byte, error) {
	dir, err := cacheDir(b.key)
	if err != nil {
		return nil, err
	}
	if out, err := readPrograms(dir); err == nil {
		return out, nil
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return nil, fmt.Errorf("secrets sidecar: cache: %w", err)
	}
	// One build per key at a time: the slipways of a test suite, started together, would
	// otherwise each compile the same packages on a cold cache.
	unlock, err := lock(ctx, dir+".lock")
	if err != nil {
		return nil, err
	}
	defer unlock()
	if out, err := readPrograms(dir); err == nil {
		return out, nil // built by another slipway while this one waited
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), ".build-")
	if err != nil {
		return nil, fmt.Errorf("secrets sidecar: cache: %w", err)
	}
	defer os.RemoveAll(tmp)
	fmt.Fprintf(progress, "slipway: building the secrets sidecar from %s for %s (once for this source; cached in %s)\n",
		b.src, strings.Join(Platforms, ", "), dir)
	start := time.Now()
	if err := b.build(ctx, tmp); err != nil {
		return nil, err
	}
	// Another slipway may have finished the same build meanwhile: its programs are the same
	// bytes, and either directory will do.
	if err := os.Rename(tmp, dir); err != nil && !errors.Is(err, syscall.ENOTEMPTY) && !errors.Is(err, os.ErrExist) {
		return nil, fmt.Errorf("secrets sidecar: cache: %w", err)
	}
	fmt.Fprintf(progress, "slipway: built the secrets sidecar in %s\n", time.Since(start).Round(100*time.Millisecond))
	return readPrograms(dir)
}

// build writes one program per platform into dir (files named as in bin/) and the key.
func (b *builder) build(ctx context.Context, dir string) error {
	for _, p := range Platforms {
		out := filepath.Join(dir, fileOf(p))
		cmd := exec.CommandContext(ctx, b.goBin, append(slices.Clone(buildArgs), "-o", out, "./"+mainPkg)...)
		cmd.Dir, cmd.Env = b.src, buildEnv(p)
		var stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stderr, &stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("secrets sidecar: go build for %s in %s: %w\n%s", p, b.src, err, strings.TrimSpace(stderr.String()))
		}
	}
	return os.WriteFile(filepath.Join(dir, keyFile), []byte(b.key+"\n"), 0o644)
}

func readPrograms(dir string) (map[string][]byte, error) {
	out := make(map[string][]byte, len(Platforms))
	for _, p := range Platforms {
		b, err := os.ReadFile(filepath.Join(dir, fileOf(p)))
		if err != nil {
			return nil, err
		}
		out[p] = b
	}
	return out, nil
}

// Generate builds the programs from the module in src into dir (bin/), with the key they were
// built from: what `go generate ./internal/secretsbin` runs before a release's build.
func Generate(ctx context.Context, src, dir string) error {
	// dir is the caller's (go generate's: the package directory); the builds run in src.
	dir, err := filepath.Abs(dir)
	if err == nil {
		err = os.MkdirAll(dir, 0o755)
	}
	if err != nil {
		return err
	}
	b, err := newBuilder(ctx, src)
	if err != nil {
		return err
	}
	return b.build(ctx, dir)
}

// lock holds an exclusive flock on path until the returned function is called; the kernel
// drops it when the process dies, so a killed build never blocks the next.
func lock(ctx context.Context, path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("secrets sidecar: cache lock: %w", err)
	}
	done := make(chan error, 1)
	go func() { done <- syscall.Flock(int(f.Fd()), syscall.LOCK_EX) }()
	select {
	case err := <-done:
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("secrets sidecar: cache lock %s: %w", path, err)
		}
		return func() { f.Close() }, nil
	case <-ctx.Done():
		f.Close() // the pending flock fails on the closed file and its goroutine ends
		return nil, ctx.Err()
	}
}
