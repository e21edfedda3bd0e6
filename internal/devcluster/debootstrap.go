package devcluster

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// debootstrapRecipe is how the systemd base image's root file system is made. Its key names
// the cached tree, so a changed recipe makes a new one and an unchanged one is made once.
type debootstrapRecipe struct {
	Suite, Variant string
	Include        []string
}

// systemdRecipe is a Debian bookworm with systemd as init, D-Bus, and busybox for the small
// servers the examples run from units (busybox httpd serves examples/hello's web).
var systemdRecipe = debootstrapRecipe{Suite: "bookworm", Variant: "minbase",
	Include: []string{"systemd", "systemd-sysv", "dbus", "busybox-static"}}

// key is the first 12 hex digits of the recipe's hash; the mirror is not part of it (every
// Debian mirror serves the same packages).
func (r debootstrapRecipe) key() string {
	h := sha256.Sum256([]byte(strings.Join([]string{"v1", r.Suite, r.Variant, strings.Join(r.Include, ",")}, "\n")))
	return hex.EncodeToString(h[:])[:12]
}

func (r debootstrapRecipe) args(dir, mirror string) []string {
	return []string{"--variant=" + r.Variant, "--include=" + strings.Join(r.Include, ","), r.Suite, dir, mirror}
}

// defaultMirror is used when apt's sources name no mirror of the suite.
const defaultMirror = "http://deb.debian.org/debian"

// aptMirror returns the first mirror apt's sources (sources.list, sources.list.d/*.list and
// *.sources, under etc) use for suite, else defaultMirror: debootstrap fetches from the
// mirror (or the proxy in front of it) this machine's apt already reaches.
func aptMirror(etc, suite string) string {
	files := []string{filepath.Join(etc, "sources.list")}
	for _, pat := range []string{"*.sources", "*.list"} {
		m, _ := filepath.Glob(filepath.Join(etc, "sources.list.d", pat))
		files = append(files, m...)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		var uri string
		if strings.HasSuffix(f, ".sources") {
			uri = deb822Mirror(string(b), suite)
		} else {
			uri = oneLineMirror(string(b), suite)
		}
		if uri != "" {
			return strings.TrimSuffix(uri, "/")
		}
	}
	return defaultMirror
}

// oneLineMirror reads `deb [options] URI SUITE COMPONENT…` lines.
func oneLineMirror(text, suite string) string {
	for _, l := range strings.Split(text, "\n") {
		f := strings.Fields(strings.TrimSpace(l))
		if len(f) < 3 || f[0] != "deb" {
			continue
		}
		f = f[1:]
		if strings.HasPrefix(f[0], "[") { // [arch=amd64 signed-by=…]
			for len(f) > 0 && !strings.HasSuffix(f[0], "]") {
				f = f[1:]
			}
			if len(f) > 0 {
				f = f[1:]
			}
		}
		if len(f) >= 2 && f[1] == suite {
			return f[0]
		}
	}
	return ""
}

// deb822Mirror reads the stanzas of a .sources file: the first URI of a deb stanza whose
// Suites hold suite.
func deb822Mirror(text, suite string) string {
	for _, stanza := range strings.Split(text, "\n\n") {
		fields := map[string]string{}
		for _, l := range strings.Split(stanza, "\n") {
			if strings.HasPrefix(l, "#") {
				continue
			}
			if k, v, ok := strings.Cut(l, ":"); ok && !strings.HasPrefix(l, " ") {
				fields[strings.ToLower(k)] = strings.TrimSpace(v)
			}
		}
		if !strings.Contains(" "+fields["types"]+" ", " deb ") || fields["enabled"] == "no" {
			continue
		}
		uris := strings.Fields(fields["uris"])
		for _, s := range strings.Fields(fields["suites"]) {
			if s == suite && len(uris) > 0 {
				return uris[0]
			}
		}
	}
	return ""
}

// errNoDebootstrap says why this machine cannot make the tree; dev up goes on without it.
var errNoDebootstrap = errors.New("no debootstrap")

// debootstrapTree returns the cached tree of r under cache, making it the first time:
// debootstrap into DIR.partial in a mount namespace of its own (the /proc and /sys it mounts
// in the target vanish with it, even when it fails), the apt caches and device nodes removed,
// the machine ID left empty (each node gets its own), then renamed to DIR. A lock file keeps
// two dev ups from making it at once.
func debootstrapTree(ctx context.Context, cache string, r debootstrapRecipe, progress io.Writer) (string, error) {
	dir := filepath.Join(cache, "debian-"+r.Suite+"-systemd-"+r.key())
	if _, err := os.Stat(filepath.Join(dir, "sbin", "init")); err == nil {
		return dir, dropMachineIDs(dir)
	}
	bin, err := exec.LookPath("debootstrap")
	if err != nil {
		if bin, err = exec.LookPath("/usr/sbin/debootstrap"); err != nil {
			return "", fmt.Errorf("%w: Debian's debootstrap is not installed (apt-get install debootstrap)", errNoDebootstrap)
		}
	}
	if os.Geteuid() != 0 {
		return "", fmt.Errorf("%w: debootstrap needs root, and slipway runs as uid %d", errNoDebootstrap, os.Geteuid())
	}
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return "", fmt.Errorf("base image cache %s: %w", cache, err)
	}
	unlock, err := lockFile(ctx, dir+".lock")
	if err != nil {
		return "", err
	}
	defer unlock()
	if _, err := os.Stat(filepath.Join(dir, "sbin", "init")); err == nil {
		return dir, nil // made by another dev up while this one waited
	}
	partial := dir + ".partial"
	if err := os.RemoveAll(partial); err != nil {
		return "", fmt.Errorf("base image cache: %w", err)
	}
	mirror := aptMirror("/etc/apt", r.Suite)
	fmt.Fprintf(progress, "dev: making the systemd base image: debootstrap %s from %s (about 2.5 minutes, once)\n",
		strings.Join(r.args(partial, mirror), " "), mirror)
	start := time.Now()
	if err := runDebootstrap(ctx, bin, r.args(partial, mirror), progress); err != nil {
		_ = os.RemoveAll(partial)
		return "", err
	}
	if err := trimTree(partial); err != nil {
		return "", err
	}
	if err := os.Rename(partial, dir); err != nil {
		return "", fmt.Errorf("base image cache: %w", err)
	}
	fmt.Fprintf(progress, "dev: debootstrap %s done in %s\n", r.Suite, time.Since(start).Round(time.Second))
	return dir, nil
}

// runDebootstrap runs debootstrap under `unshare --mount`, reporting its last `I:` line every
// 15 seconds; a failure returns the tail of its output.
func runDebootstrap(ctx context.Context, bin string, args []string, progress io.Writer) error {
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		return fmt.Errorf("%w: debootstrap runs in a mount namespace of its own, which needs unshare (util-linux)", errNoDebootstrap)
	}
	cmd := exec.CommandContext(ctx, unshare, append([]string{"--mount", "--propagation", "private", "--", bin}, args...)...)
	cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive", "LC_ALL=C")
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	tail := newTail(20)
	var mu sync.Mutex
	last := "starting"
	scanned := make(chan struct{})
	go func() {
		defer close(scanned)
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			tail.add(sc.Text())
			if l := sc.Text(); strings.HasPrefix(l, "I: ") {
				mu.Lock()
				last = strings.TrimPrefix(l, "I: ")
				mu.Unlock()
			}
		}
	}()
	start := time.Now()
	tick := time.NewTicker(15 * time.Second)
	defer tick.Stop()
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		pw.Close()
		return fmt.Errorf("debootstrap: %w", err)
	}
	go func() { done <- cmd.Wait(); pw.Close() }()
	for {
		select {
		case err := <-done:
			<-scanned
			if err != nil {
				return fmt.Errorf("debootstrap: %w\n%s", err, tail)
			}
			return nil
		case now := <-tick.C:
			mu.Lock()
			fmt.Fprintf(progress, "dev:   debootstrap: %s, %s\n", last, now.Sub(start).Round(time.Second))
			mu.Unlock()
		}
	}
}

// trimTree drops from a fresh debootstrap what an image must not carry: downloaded packages
// and indexes, device nodes (the runtime gives every container its /dev), and the machine ID
// (empty: systemd sets one per machine, slipway's from the node's state).
func trimTree(dir string) error {
	for _, glob := range []string{"var/cache/apt/archives/*.deb", "var/cache/apt/*.bin", "var/lib/apt/lists/*_*", "dev/*"} {
		m, _ := filepath.Glob(filepath.Join(dir, glob))
		for _, p := range m {
			if err := os.RemoveAll(p); err != nil {
				return fmt.Errorf("base image cache: %w", err)
			}
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "etc", "machine-id"), nil, 0o444); err != nil {
		return fmt.Errorf("base image cache: %w", err)
	}
	return dropMachineIDs(dir)
}

// dropMachineIDs removes D-Bus's machine ID (/var/lib/dbus/machine-id, written by dbus's
// postinst): systemd takes it before container_uuid, so every pod of the image without a claim
// on /var/lib (a role's) would share it. A tree cached before this removal loses it here, and
// its cached layer and digest (baseImage) with it, so the image is built and pushed anew.
func dropMachineIDs(dir string) error {
	p := filepath.Join(dir, "var", "lib", "dbus", "machine-id")
	if _, err := os.Lstat(p); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	for _, f := range []string{p, dir + ".layer.tar.gz", dir + ".digest"} {
		if err := os.Remove(f); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("base image cache: %w", err)
		}
	}
	return nil
}
