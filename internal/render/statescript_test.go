package render

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"
)

// These tests run StateScript, the exact text of the init container and the removal Job,
// with /bin/sh against a tree of files, directories, symlinks, a hard link, modes, owners and
// extended attributes, and compare manifests of the tree before and after.

// runScript runs the state step in mode with version, over root; extra is prepended to PATH
// (stand-ins for df, cp, mv that fake a full volume, an old cp, or a kill).
func runScript(t *testing.T, root, mode, version, extra string, env ...string) (string, error) {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", StateScript, InitContainerState, mode)
	path := os.Getenv("PATH")
	if extra != "" {
		path = extra + ":" + path
	}
	cmd.Env = append([]string{"PATH=" + path, "SLIPWAY_STATE_ROOT=" + root, EnvStateVersion + "=" + version}, env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func mustRun(t *testing.T, root, mode, version string) string {
	t.Helper()
	out, err := runScript(t, root, mode, version, "")
	if err != nil {
		t.Fatalf("state step %s at version %q: %v\n%s", mode, version, err, out)
	}
	return out
}

// makeTree fills root with what a node's /var/lib holds.
func makeTree(t *testing.T, root string) {
	t.Helper()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	file := func(rel string, mode os.FileMode, body string) {
		p := filepath.Join(root, rel)
		must(os.MkdirAll(filepath.Dir(p), 0o755))
		must(os.WriteFile(p, []byte(body), 0o600))
		must(os.Chmod(p, mode))
	}
	file("postgresql/16/main/base/1/1259", 0o600, strings.Repeat("page", 4096))
	file("postgresql/16/main/PG_VERSION", 0o600, "16\n")
	file("ssh/ssh_host_ed25519_key", 0o600, "secret key\n")
	file("ssh/ssh_host_ed25519_key.pub", 0o644, "ssh-ed25519 AAAA\n")
	file("app/bin/run", 0o4755, "#!/bin/sh\n")
	file("app/name with spaces\nand a newline", 0o640, "odd name\n")
	file(".hidden", 0o644, "dot file\n")
	file("..dots", 0o644, "two dots\n")
	file("-dash", 0o644, "leading dash\n")
	file("empty", 0o644, "")
	must(os.Mkdir(filepath.Join(root, "spool"), 0o755))
	must(os.Chmod(filepath.Join(root, "spool"), 0o1777))
	must(os.Mkdir(filepath.Join(root, "private"), 0o700))
	must(os.Symlink("16/main", filepath.Join(root, "postgresql/current")))
	must(os.Symlink("/etc/hostname", filepath.Join(root, "absolute-link")))
	must(os.Symlink("gone", filepath.Join(root, "dangling")))
	must(os.Link(filepath.Join(root, "ssh/ssh_host_ed25519_key.pub"), filepath.Join(root, "app/hostkey.pub")))
	must(os.Mkdir(filepath.Join(root, "lost+found"), 0o700))
	must(unix.Setxattr(filepath.Join(root, "postgresql/16/main/PG_VERSION"), "user.checksum", []byte("abc"), 0))
	must(unix.Setxattr(filepath.Join(root, "spool"), "user.purpose", []byte("mail"), 0))
	must(unix.Lsetxattr(filepath.Join(root, "app/bin/run"), "user.empty", nil, 0))
	if os.Geteuid() == 0 {
		must(os.Lchown(filepath.Join(root, "postgresql"), 70, 70))
		must(os.Lchown(filepath.Join(root, "postgresql/16/main/PG_VERSION"), 70, 71))
		must(os.Lchown(filepath.Join(root, "postgresql/current"), 70, 70))
		must(os.Lchown(filepath.Join(root, "private"), 1234, 5678))
	}
}

// manifest lists every entry under root but slipway's directory: path, type and mode, owner,
// size, links, modification time, content hash or link target, and extended attributes.
func manifest(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if rel == StateMetaDir {
			return filepath.SkipDir
		}
		if rel == "." {
			return nil // the mount point itself: renames inside it change its times
		}
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			return err
		}
		fi, _ := d.Info()
		line := fmt.Sprintf("%q %s uid=%d gid=%d size=%d nlink=%d mtime=%d.%09d", rel, fi.Mode(), st.Uid, st.Gid, st.Size, st.Nlink, st.Mtim.Sec, st.Mtim.Nsec)
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			line += " -> " + target
		case fi.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			h := sha256.Sum256(b)
			line += " sha256=" + hex.EncodeToString(h[:8])
		}
		return appendXattrs(&out, line, p)
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func appendXattrs(out *[]string, line, p string) error {
	buf := make([]byte, 4096)
	n, err := unix.Llistxattr(p, buf)
	if err != nil && !errors.Is(err, unix.ENOTSUP) {
		return err
	}
	var names []string
	for _, name := range strings.Split(string(buf[:max(n, 0)]), "\x00") {
		if name != "" {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	for _, name := range names {
		v := make([]byte, 256)
		m, err := unix.Lgetxattr(p, name, v)
		if err != nil {
			return err
		}
		line += fmt.Sprintf(" %s=%q", name, v[:m])
	}
	*out = append(*out, line)
	return nil
}

// migrate plays the release that fails: it rewrites, removes and adds data, as a migration
// would, before its pod is found not ready.
func migrate(t *testing.T, root string) {
	t.Helper()
	for _, err := range []error{
		os.WriteFile(filepath.Join(root, "postgresql/16/main/PG_VERSION"), []byte("17\n"), 0o600),
		os.RemoveAll(filepath.Join(root, "ssh")),
		os.WriteFile(filepath.Join(root, "new-format.db"), []byte("migrated"), 0o644),
		os.Chmod(filepath.Join(root, "private"), 0o755),
		unix.Setxattr(filepath.Join(root, "spool"), "user.purpose", []byte("changed"), 0),
		os.RemoveAll(filepath.Join(root, "dangling")),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
}

func metaFile(t *testing.T, root, name string) (string, bool) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, StateMetaDir, name))
	if errors.Is(err, fs.ErrNotExist) {
		return "", false
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(b), true
}

// stub writes an executable sh script name into a new directory and returns the directory.
func stub(t *testing.T, name, body string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestStateScriptCopyFailRestore(t *testing.T) {
	realCp, err := exec.LookPath("cp")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, from, to string
		path           string // stand-ins on PATH: which copy the script falls back to
		how            string
	}{
		{name: "old layout, reflink-capable cp", from: "", to: "2", how: "reflink"},
		{name: "versioned, reflink-capable cp", from: "1", to: "2", how: "reflink"},
		{name: "cp without --reflink", from: "1", to: "2", how: "cp",
			path: stub(t, "cp", `for a; do [ "$a" = --reflink=auto ] && { echo "cp: unrecognized option '--reflink=auto'" >&2; exit 1; }; done; exec `+realCp+` "$@"`+"\n")},
		{name: "no cp -a: tar with xattrs", from: "1", to: "2", how: "tarx",
			path: stub(t, "cp", "echo 'cp: invalid option -- a' >&2; exit 1\n")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			if tc.from != "" {
				// The first release, on an empty claim: nothing to copy.
				if out := mustRun(t, root, "start", tc.from); out != "" {
					t.Errorf("the first start says %q, want nothing", out)
				}
			}
			makeTree(t, root)
			before := manifest(t, root)
			out, err := runScript(t, root, "start", tc.to, tc.path)
			if err != nil {
				t.Fatalf("copy: %v\n%s", err, out)
			}
			if !strings.Contains(out, ", "+tc.how+") before the migration from version '"+tc.from+"' to '"+tc.to+"'") {
				t.Errorf("copy output %q does not say it copied with %s from %q to %q", out, tc.how, tc.from, tc.to)
			}
			if v, _ := metaFile(t, root, "version"); v != tc.to {
				t.Errorf("version after the copy = %q, want %q", v, tc.to)
			}
			if v, _ := metaFile(t, root, "copy/to"); v != tc.to {
				t.Errorf("the copy says it was handed to %q, want %q", v, tc.to)
			}
			// lost+found belongs to the file system: it is neither copied nor moved.
			inCopy := slices.DeleteFunc(slices.Clone(before), func(l string) bool { return strings.HasPrefix(l, `"lost+found" `) })
			if diff := cmp.Diff(inCopy, manifest(t, filepath.Join(root, StateMetaDir, "copy", "data"))); diff != "" {
				t.Errorf("the copy differs from the data (-want +got):\n%s", diff)
			}
			migrate(t, root)
			// The pod restarts (same template) before it is found not ready: no second copy.
			mustRun(t, root, "start", tc.to)
			if diff := cmp.Diff(inCopy, manifest(t, filepath.Join(root, StateMetaDir, "copy", "data"))); diff != "" {
				t.Errorf("a restart of the new release changed the copy (-want +got):\n%s", diff)
			}
			// The rollback: the previous template's pod starts.
			out = mustRun(t, root, "start", tc.from)
			if !strings.Contains(out, "put back the copy") {
				t.Errorf("restore output %q does not say it put the copy back", out)
			}
			if diff := cmp.Diff(before, manifest(t, root)); diff != "" {
				t.Errorf("the restored tree differs from the original (-want +got):\n%s", diff)
			}
			if v, _ := metaFile(t, root, "version"); v != tc.from {
				t.Errorf("version after the restore = %q, want %q", v, tc.from)
			}
			entries, _ := os.ReadDir(filepath.Join(root, StateMetaDir))
			var names []string
			for _, e := range entries {
				names = append(names, e.Name())
			}
			if diff := cmp.Diff([]string{"version"}, names); diff != "" {
				t.Errorf("slipway's directory after the restore (-want +got):\n%s", diff)
			}
			// The rolled-back pod restarting later changes nothing.
			mustRun(t, root, "start", tc.from)
			if diff := cmp.Diff(before, manifest(t, root)); diff != "" {
				t.Errorf("a restart after the restore changed the tree (-want +got):\n%s", diff)
			}
		})
	}
}
