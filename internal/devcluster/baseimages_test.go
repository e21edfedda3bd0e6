package devcluster

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestAptMirror(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		want  string
	}{
		{"deb822 of Debian's image", map[string]string{"sources.list.d/debian.sources": `Types: deb
# http://snapshot.debian.org/archive/debian/20250520T000000Z
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://deb.debian.org/debian-security
Suites: bookworm-security
Components: main
`}, "http://deb.debian.org/debian"},
		{"deb822: a disabled stanza and a deb-src one are not used", map[string]string{"sources.list.d/a.sources": `Types: deb
URIs: http://off.example/debian
Suites: bookworm
Enabled: no

Types: deb-src
URIs: http://src.example/debian
Suites: bookworm

Types: deb
URIs: http://mirror.example/debian/
Suites: bookworm
`}, "http://mirror.example/debian"},
		{"one-line format with options", map[string]string{"sources.list": `# comment
deb [arch=amd64 signed-by=/k.gpg] http://proxy.example:3142/debian bookworm main
`}, "http://proxy.example:3142/debian"},
		{"another suite only", map[string]string{"sources.list": "deb http://mirror.example/debian trixie main\n"}, defaultMirror},
		{"no sources", nil, defaultMirror},
		{"a disabled file is not read", map[string]string{"sources.list.d/x.list.disabled-by-farm": "deb http://x.example/debian bookworm main\n"}, defaultMirror},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			etc := t.TempDir()
			for name, content := range tt.files {
				p := filepath.Join(etc, name)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if got := aptMirror(etc, "bookworm"); got != tt.want {
				t.Errorf("aptMirror = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestDebootstrapRecipe(t *testing.T) {
	// The key names the cached tree: it must change with the recipe and only with it.
	r := systemdRecipe
	if k := r.key(); k != r.key() || len(k) != 12 {
		t.Fatalf("key %q is not a stable 12-digit key", k)
	}
	other := r
	other.Include = append([]string{"curl"}, r.Include...)
	if other.key() == r.key() {
		t.Errorf("a recipe with another package list has the same key %s", r.key())
	}
	want := []string{"--variant=minbase", "--include=systemd,systemd-sysv,dbus,busybox-static", "bookworm", "/d", "http://m/debian"}
	if diff := cmp.Diff(want, r.args("/d", "http://m/debian")); diff != "" {
		t.Errorf("args (-want +got):\n%s", diff)
	}
}

func TestBusyboxApplets(t *testing.T) {
	got := busyboxApplets([]byte("usr/bin/[\nbin/busybox\nlinuxrc\nbin/sh\nsbin/init\nusr/sbin/httpd\n"))
	want := []string{"usr/bin/[", "bin/sh", "sbin/init", "usr/sbin/httpd"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("applets (-want +got):\n%s", diff)
	}
}

func TestBusyboxRootfs(t *testing.T) {
	dir := t.TempDir()
	if err := BusyboxRootfs(context.Background(), dir); err != nil {
		t.Fatal(err)
	}
	for _, applet := range []string{"bin/sh", "bin/cp", "usr/bin/nc", "usr/sbin/httpd", "bin/tar", "usr/bin/du", "bin/df"} {
		target, err := os.Readlink(filepath.Join(dir, applet))
		if err != nil || target != BusyboxBinary {
			t.Errorf("%s: link to %q (%v), want %s", applet, target, err, BusyboxBinary)
		}
	}
	fi, err := os.Stat(filepath.Join(dir, "bin", "busybox"))
	if err != nil || fi.Mode().Perm() != 0o755 || fi.Size() == 0 {
		t.Fatalf("bin/busybox: %v %v", fi, err)
	}
	if fi, err := os.Stat(filepath.Join(dir, "tmp")); err != nil || fi.Mode()&os.ModeSticky == 0 {
		t.Errorf("tmp is not sticky: %v %v", fi, err)
	}
	// Made again over an existing tree (a newer busybox): the links are written anew.
	if err := BusyboxRootfs(context.Background(), dir); err != nil {
		t.Fatalf("second run: %v", err)
	}
}

// TestBusyboxTreeFreshCache makes the busybox tree where the cache directory does not exist
// yet, as on a fresh machine, where busybox is the cache's first entry (its lock file needs the
// directory), and finds the tree again on the second call.
func TestBusyboxTreeFreshCache(t *testing.T) {
	cache := filepath.Join(t.TempDir(), "not", "yet")
	dir, err := busyboxTree(context.Background(), cache)
	if err != nil {
		t.Fatalf("fresh cache: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(dir, "bin", "sh")); err != nil {
		t.Fatalf("tree: %v", err)
	}
	again, err := busyboxTree(context.Background(), cache)
	if err != nil || again != dir {
		t.Fatalf("second call: %q, %v; want %q", again, err, dir)
	}
}

// TestSystemdTree makes (once; cached after) the tree of the systemd base image as dev up
// does, and checks it is a Debian with systemd as init, busybox, no package cache and no
// machine ID. It needs root and Debian's debootstrap (.ci/packages), and fails without them.
func TestSystemdTree(t *testing.T) {
	base, err := cacheBase()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	var progress strings.Builder
	dir, err := debootstrapTree(ctx, filepath.Join(base, "base-images"), systemdRecipe, &progress)
	if err != nil {
		t.Fatalf("%v\nprogress:\n%s", err, progress.String())
	}
	t.Logf("tree %s\n%s", dir, progress.String())
	if target, err := os.Readlink(filepath.Join(dir, "sbin", "init")); err != nil || !strings.HasSuffix(target, "systemd") {
		t.Errorf("sbin/init links to %q (%v), want systemd", target, err)
	}
	for _, f := range []string{"lib/systemd/systemd", "bin/busybox", "usr/bin/dbus-daemon", "etc/os-release"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	if _, err := os.Lstat(filepath.Join(dir, "var/lib/dbus/machine-id")); !os.IsNotExist(err) {
		t.Errorf("var/lib/dbus/machine-id is in the tree (%v): every role pod would share it", err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "etc", "machine-id")); err != nil || len(b) != 0 {
		t.Errorf("etc/machine-id: %q (%v), want empty", b, err)
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "var/cache/apt/archives/*.deb")); len(m) > 0 {
		t.Errorf("the package cache is left in the tree: %d .deb files", len(m))
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "dev/*")); len(m) > 0 {
		t.Errorf("dev/ holds %v", m)
	}
}

// TestBaseImageLayer: the layer of a base's tree keeps owners, modes, links and hard links,
// leaves out pipes, and is made once: the digest of a second call comes from the cache.
func TestBaseImageLayer(t *testing.T) {
	root := t.TempDir()
	tree := filepath.Join(root, "tree")
	for _, d := range []string{"etc", "usr/bin"} {
		if err := os.MkdirAll(filepath.Join(tree, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(tree, "etc", "shadow"), []byte("root:*:1::::::\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(filepath.Join(tree, "etc", "shadow"), 0, 42); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tree, "usr/bin/a"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(filepath.Join(tree, "usr/bin/a"), filepath.Join(tree, "usr/bin/b")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/usr/bin/a", filepath.Join(tree, "usr/bin/c")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(tree, "etc", "fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	img, digest, err := baseImage(tree, []string{"/sbin/init"})
	if err != nil {
		t.Fatal(err)
	}
	if h, err := img.Digest(); err != nil || h != digest {
		t.Fatalf("digest %s, image %s (%v)", digest, h, err)
	}
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("layers %d (%v)", len(layers), err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	var got []string
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, fmt.Sprintf("%s %c %o %d:%d %s %d", h.Name, h.Typeflag, h.Mode, h.Uid, h.Gid, h.Linkname, h.ModTime.Unix()))
	}
	want := []string{
		"etc/ 5 755 0:0  0",
		"etc/shadow 0 640 0:42  0",
		"usr/ 5 755 0:0  0",
		"usr/bin/ 5 755 0:0  0",
		"usr/bin/a 0 755 0:0  0",
		"usr/bin/b 1 755 0:0 usr/bin/a 0",
		"usr/bin/c 2 777 0:0 /usr/bin/a 0",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("layer entries (-want +got):\n%s", diff)
	}
	// A second call reads the layer and digest the first wrote.
	if err := os.WriteFile(filepath.Join(tree, "etc", "new"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, again, err := baseImage(tree, []string{"/sbin/init"}); err != nil || again != digest {
		t.Errorf("second call: digest %s (%v), want the cached %s", again, err, digest)
	}
}
