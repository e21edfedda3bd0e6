package spec_test

import (
	"archive/tar"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"slipway.dev/slipway/internal/spec"
)

// userArchives writes into dir/build a docker-archive and an OCI-layout tar per config User.
func userArchives(t *testing.T, dir string, users ...string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dir, "build"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, u := range users {
		img, err := mutate.Config(empty.Image, v1.Config{User: u, Entrypoint: []string{"/app"}})
		if err != nil {
			t.Fatal(err)
		}
		base := "user-" + strings.NewReplacer(":", "-").Replace(u)
		if u == "" {
			base = "no-user"
		}
		tag, _ := name.NewTag("example.invalid/sso:latest")
		if err := tarball.WriteToFile(filepath.Join(dir, "build", base+".docker.tar"), tag, img); err != nil {
			t.Fatal(err)
		}
		lay := filepath.Join(t.TempDir(), "layout")
		p, err := layout.Write(lay, empty.Index)
		if err == nil {
			err = p.AppendImage(img)
		}
		if err != nil {
			t.Fatal(err)
		}
		tarDir(t, lay, filepath.Join(dir, "build", base+".oci.tar"))
	}
}

// tarDir writes the files under dir into the tar out, by their paths relative to dir.
func tarDir(t *testing.T, dir, out string) {
	t.Helper()
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tw := tar.NewWriter(f)
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if err := tw.WriteHeader(&tar.Header{Name: rel, Mode: 0o644, Size: int64(len(b)), Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		_, err = tw.Write(b)
		return err
	})
	if err == nil {
		err = tw.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
}

// TestServiceImageUser (issue 43 item 5): a service image that would run as root (its
// container is locked to runAsNonRoot) is refused at load, at its line, when the file shows
// it: a rootfs without `user`, a `user` that is root or a name, an archive without `user`
// whose own config has no user, root or a name (docker-archive and OCI layout alike). A base
// image without `user` loads: its config is known only once pulled, and plan checks it.
func TestServiceImageUser(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "nodes", "web", "rootfs"), 0o755); err != nil {
		t.Fatal(err)
	}
	userArchives(t, dir, "", "0", "app", "65532", "65532:65532")
	const at = "slipway.yaml:8: nodes.web.roles.sso.service.image: the service would run as root, which its locked-down container refuses (runAsNonRoot): "
	const fix = "; set user to a number other than 0 (e.g. `user: 65532`)"
	tests := []struct {
		name, image string
		want        []string
	}{
		{"rootfs without user", "{rootfs: nodes/web/rootfs}", []string{at + "the rootfs image: it has no user, so it runs as root" + fix}},
		{"rootfs with a user", "{rootfs: nodes/web/rootfs, user: 65532}", nil},
		{"rootfs with user and group", `{rootfs: nodes/web/rootfs, user: "65532:65532"}`, nil},
		{"user 0", `{rootfs: nodes/web/rootfs, user: "0:0"}`, []string{at + `image.user: its user "0:0" is root` + fix}},
		{"user root", "{rootfs: nodes/web/rootfs, user: root}", []string{at + `image.user: its user "root" is root` + fix}},
		{"user by name", "{rootfs: nodes/web/rootfs, user: app}", []string{at + `image.user: its user "app" is a name: the kubelet cannot check that a name is not root and refuses the container; give the user's number` + fix}},
		{"not a user", `{rootfs: nodes/web/rootfs, user: "a b"}`, []string{
			`slipway.yaml:8: nodes.web.roles.sso.service.image.user: "a b" is not a user: give ` + "`uid`, `uid:gid`, `name` or `name:group`"}},
		{"docker-archive without user", "{archive: build/no-user.docker.tar}", []string{at + "the archive's config: it has no user, so it runs as root" + fix}},
		{"OCI layout without user", "{archive: build/no-user.oci.tar}", []string{at + "the archive's config: it has no user, so it runs as root" + fix}},
		{"archive as root", "{archive: build/user-0.docker.tar}", []string{at + `the archive's config: its user "0" is root` + fix}},
		{"archive by name", "{archive: build/user-app.oci.tar}", []string{at + `the archive's config: its user "app" is a name: the kubelet cannot check that a name is not root and refuses the container; give the user's number` + fix}},
		{"archive with a user", "{archive: build/user-65532.oci.tar}", nil},
		{"archive with user and group", "{archive: build/user-65532-65532.docker.tar}", nil},
		{"archive as root, user given", "{archive: build/user-0.docker.tar, user: 1000}", nil},
		{"base without user: plan checks it", "{base: example.invalid/sso@sha256:5119b8defcf0d0a167ae30417b8668d30851996807ead381a729f3226141d3ba}", nil},
		{"base as root", `{base: example.invalid/sso:1, user: "0"}`, []string{at + `image.user: its user "0" is root` + fix}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := strings.Join([]string{
				"group: demo",
				"nodes:",
				"  web:",
				"    image: {rootfs: nodes/web/rootfs}",
				"    roles:",
				"      sso:",
				"        service:",
				"          image: " + tt.image,
			}, "\n") + "\n"
			_, err := spec.Parse("slipway.yaml", []byte(file), dir)
			var got []string
			if err != nil {
				got = strings.Split(err.Error(), "\n")
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRootUserProblem: the kubelet's rule for runAsNonRoot, which plan applies to a pulled
// base image's config.
func TestRootUserProblem(t *testing.T) {
	for user, root := range map[string]bool{"": true, "0": true, "0:1000": true, "root": true, "root:root": true, "app": true,
		"1000": false, "1000:0": false, "65532:65532": false, "1000:app": false} {
		if got := spec.RootUserProblem(user) != ""; got != root {
			t.Errorf("RootUserProblem(%q) refuses %v, want %v", user, got, root)
		}
	}
}
