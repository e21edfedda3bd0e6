package devcluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// BusyboxBinary is where Debian's busybox-static puts its static busybox: the one program the
// dev environment's small images run (a static binary needs no library in the image).
const BusyboxBinary = "/bin/busybox"

// BusyboxRootfs writes into dir a root file system that runs programs for real with nothing
// but Debian's static busybox: bin/busybox, a link for each of its applets (bin/sh, bin/cp,
// usr/bin/nc, …) as `busybox --list-full` places them, a root user and a sticky /tmp. The
// examples' `init: none` nodes and the real-node tests build their images from it.
func BusyboxRootfs(ctx context.Context, dir string) error {
	src, err := os.Open(BusyboxBinary)
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("busybox rootfs: %s is missing: install Debian's busybox-static", BusyboxBinary)
	}
	if err != nil {
		return fmt.Errorf("busybox rootfs: %w", err)
	}
	defer src.Close()
	out, err := exec.CommandContext(ctx, BusyboxBinary, "--list-full").Output()
	if err != nil {
		return fmt.Errorf("busybox rootfs: %s --list-full: %w", BusyboxBinary, err)
	}
	for _, d := range []string{"bin", "sbin", "usr/bin", "usr/sbin", "etc", "tmp", "var/lib"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return fmt.Errorf("busybox rootfs: %w", err)
		}
	}
	if err := os.Chmod(filepath.Join(dir, "tmp"), 0o777|os.ModeSticky); err != nil {
		return fmt.Errorf("busybox rootfs: %w", err)
	}
	if err := copyFile(src, filepath.Join(dir, "bin", "busybox"), 0o755); err != nil {
		return fmt.Errorf("busybox rootfs: %w", err)
	}
	for _, applet := range busyboxApplets(out) {
		link := filepath.Join(dir, applet)
		_ = os.Remove(link) // written again: a rootfs made before keeps its links current
		if err := os.Symlink(BusyboxBinary, link); err != nil {
			return fmt.Errorf("busybox rootfs: %w", err)
		}
	}
	files := map[string]string{
		"etc/passwd": "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n",
		"etc/group":  "root:x:0:\nnogroup:x:65534:\n",
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			return fmt.Errorf("busybox rootfs: %w", err)
		}
	}
	return nil
}

// busyboxApplets are the applet paths of `busybox --list-full` that go into the rootfs as
// links: relative paths in the directories BusyboxRootfs makes, busybox itself aside.
func busyboxApplets(list []byte) []string {
	var out []string
	for _, l := range strings.Split(string(bytes.TrimSpace(list)), "\n") {
		l = strings.TrimSpace(l)
		dir := filepath.Dir(l)
		if l == "bin/busybox" || (dir != "bin" && dir != "sbin" && dir != "usr/bin" && dir != "usr/sbin") {
			continue // linuxrc, a boot-time name, has no place in a container
		}
		out = append(out, l)
	}
	return out
}

func copyFile(src io.Reader, dst string, mode os.FileMode) error {
	f, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, src); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
