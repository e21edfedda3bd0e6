package devcluster

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// The base images dev up makes and pushes to the dev registry, for `image.base` of a group
// file written as `${K8S_REGISTRY}/<name>` (examples/hello's nodes use both). Their content
// depends on this machine (its busybox, the Debian mirror's packages on the day the tree was
// made), so they are named by tag, not digest; the tree behind each is cached and made once.
const (
	// BusyboxBase is Debian's static busybox with its applet links (BusyboxRootfs):
	// enough for `init: none` nodes that really run (nc, httpd, sh).
	BusyboxBase = "slipway-dev/busybox:static"
	// SystemdBase is a Debian bookworm made by debootstrap (systemdRecipe), /sbin/init its
	// command: what an `init: systemd` node is built on.
	SystemdBase = "slipway-dev/debian:bookworm-systemd"
)

// baseImages are the cached trees of the base images, made in the background while dev up
// builds and starts the cluster; push waits for them.
type baseImages struct {
	done     chan struct{}
	progress io.Writer
	cache    string
	trees    map[string]string // base name → its tree; a base that could not be made is absent
	missing  map[string]error  // base name → why it was not made
}

// startBaseImages makes the trees of the base images. On a cluster that already runs (its
// cluster.json is there) it makes them before returning, so that dev up does not hold the
// cluster's lock (and the tests of others) while debootstrap runs; otherwise in the background,
// beside the Go builds of a first start. opts.Progress becomes safe for the two writers.
func startBaseImages(ctx context.Context, opts *Options) *baseImages {
	opts.Progress = &lockedWriter{w: opts.Progress}
	b := &baseImages{done: make(chan struct{}), progress: opts.Progress, trees: map[string]string{}, missing: map[string]error{}}
	base, err := cacheBase()
	if err != nil {
		b.missing[BusyboxBase], b.missing[SystemdBase] = err, err
		close(b.done)
		return b
	}
	b.cache = filepath.Join(base, "base-images")
	if _, err := os.Stat(filepath.Join(opts.Dir, "cluster.json")); err == nil {
		b.make(ctx)
		return b
	}
	go b.make(ctx)
	return b
}

func (b *baseImages) make(ctx context.Context) {
	defer close(b.done)
	if dir, err := busyboxTree(ctx, b.cache); err != nil {
		b.missing[BusyboxBase] = err
	} else {
		b.trees[BusyboxBase] = dir
	}
	if dir, err := debootstrapTree(ctx, b.cache, systemdRecipe, b.progress); err != nil {
		b.missing[SystemdBase] = err
	} else {
		b.trees[SystemdBase] = dir
	}
}

// busyboxKey names a tree made from this machine's busybox binary: busybox-<its digest>.
func busyboxKey() (string, error) {
	bin, err := os.ReadFile(BusyboxBinary)
	if err != nil {
		return "", fmt.Errorf("%s is missing: install Debian's busybox-static: %w", BusyboxBinary, err)
	}
	sum := sha256.Sum256(bin)
	return "busybox-" + hex.EncodeToString(sum[:])[:12], nil
}

// busyboxTree is BusyboxRootfs in the cache, keyed by the busybox binary's content.
func busyboxTree(ctx context.Context, cache string) (string, error) {
	key, err := busyboxKey()
	if err != nil {
		return "", err
	}
	return cachedTree(ctx, filepath.Join(cache, key), filepath.Join("bin", "sh"), func(partial string) error {
		return BusyboxRootfs(ctx, partial)
	})
}

// cachedTree returns dir once it holds marker, else makes it: fill writes the tree into
// <dir>.partial, renamed to dir when complete, under <dir>.lock, so two dev ups (or test
// binaries) never write one tree at once and an interrupted one leaves no half tree as dir.
func cachedTree(ctx context.Context, dir, marker string, fill func(partial string) error) (string, error) {
	done := func() bool { _, err := os.Stat(filepath.Join(dir, marker)); return err == nil }
	if done() {
		return dir, nil
	}
	// On a fresh machine the tree may be the cache's first: its lock needs the directory.
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return "", err
	}
	unlock, err := lockFile(ctx, dir+".lock")
	if err != nil {
		return "", err
	}
	defer unlock()
	if done() { // made by another process while we waited for the lock
		return dir, nil
	}
	partial := dir + ".partial"
	if err := os.RemoveAll(partial); err != nil {
		return "", err
	}
	if err := fill(partial); err != nil {
		return "", err
	}
	if err := os.RemoveAll(dir); err != nil {
		return "", err
	}
	return dir, os.Rename(partial, dir)
}

// baseCommand is each base image's command: a shell for busybox (a node sets its own), init
// for systemd.
var baseCommand = map[string][]string{BusyboxBase: {"/bin/sh"}, SystemdBase: {"/sbin/init"}}

// pushBaseImages waits for the trees and pushes each base image whose tag does not already
// name the same image; a base that could not be made is reported and skipped (the nodes built
// on it fail to build, naming it).
func (e *Env) pushBaseImages(ctx context.Context, b *baseImages) error {
	select {
	case <-b.done:
	case <-ctx.Done():
		return fmt.Errorf("dev cluster: base images: %w", ctx.Err())
	}
	for _, name := range []string{BusyboxBase, SystemdBase} {
		if why := b.missing[name]; why != nil {
			fmt.Fprintf(b.progress, "dev: no base image %s/%s: %v\n", e.Registry, name, why)
			if !errors.Is(why, errNoDebootstrap) && name == SystemdBase {
				fmt.Fprintf(b.progress, "dev: the next dev up tries again\n")
			}
			continue
		}
		if err := e.pushBase(ctx, b, name); err != nil {
			return err
		}
	}
	return nil
}

// pushBase pushes the image of the base's tree (its layer and digest cached beside the tree,
// baseLayer) unless the registry's tag already names that digest: a dev up of a running cluster
// then reads nothing but one manifest.
func (e *Env) pushBase(ctx context.Context, b *baseImages, base string) error {
	img, digest, err := baseImage(b.trees[base], baseCommand[base])
	if err != nil {
		return fmt.Errorf("dev cluster: base image %s: %w", base, err)
	}
	ref, err := name.ParseReference(e.Registry+"/"+base, name.Insecure)
	if err != nil {
		return fmt.Errorf("dev cluster: base image %s: %w", base, err)
	}
	if d, err := remote.Head(ref, remote.WithContext(ctx)); err == nil && d.Digest == digest {
		return nil
	}
	if err := remote.Write(ref, img, remote.WithContext(ctx)); err != nil {
		return fmt.Errorf("dev cluster: base image %s: push: %w", base, err)
	}
	fmt.Fprintf(b.progress, "dev: pushed base image ${K8S_REGISTRY}/%s (%s)\n", base, digest)
	return nil
}

// lockedWriter serialises writes: dev up's progress and the base images' share one writer.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
