package spec_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// imageAt is a group whose node web takes its image from the line img, at line 4.
func imageAt(img string) string {
	return doc("group: demo", "nodes:", "  web:", "    image: "+img)
}

// TestImagePathsStayInGroupDirectory: a rootfs or an archive, of a node, of the defaults or
// of a role's service, is refused when it leaves the group directory, by the message add[].src
// and config files get; a link inside a rootfs tree is not followed here (the layer keeps it
// as a link).
func TestImagePathsStayInGroupDirectory(t *testing.T) {
	dir, outside := contextDir(t)
	secret := filepath.Join(outside, "secret")
	for _, d := range []string{filepath.Join(outside, "rootfs"), filepath.Join(dir, "build")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "build", "app.tar"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("conf/tree", filepath.Join(dir, "tree-link")); err != nil {
		t.Fatal(err)
	}
	const at = `slipway.yaml:4: nodes.web.image.`
	tests := []struct {
		name, file string
		want       []string
	}{
		{"rootfs: the machine's root", imageAt("{rootfs: /}"), []string{
			at + `rootfs: / is an absolute path: write it relative to the group file's directory`}},
		{"rootfs: absolute", imageAt("{rootfs: /etc}"), []string{
			at + `rootfs: /etc is an absolute path: write it relative to the group file's directory`}},
		{"rootfs: absolute inside", imageAt("{rootfs: " + filepath.Join(dir, "conf", "tree") + "}"), []string{
			at + `rootfs: ` + filepath.Join(dir, "conf", "tree") + ` is an absolute path: write it relative to the group file's directory`}},
		{"rootfs: dot-dot", imageAt("{rootfs: ../outside/rootfs}"), []string{
			at + `rootfs: ../outside/rootfs is outside the group file's directory`}},
		{"rootfs: dot-dot that comes back in", imageAt("{rootfs: conf/../../group/conf/tree}"), nil},
		{"rootfs: directory link", imageAt("{rootfs: dir-link}"), []string{
			at + `rootfs: dir-link resolves to ` + outside + `, outside the group file's directory`}},
		{"rootfs: under a directory link", imageAt("{rootfs: dir-link/rootfs}"), []string{
			at + `rootfs: dir-link/rootfs resolves to ` + filepath.Join(outside, "rootfs") + `, outside the group file's directory`}},
		{"rootfs: dangling link", imageAt("{rootfs: dangling}"), []string{
			at + `rootfs: dangling is a link to nothing (no such file or directory)`}},
		{"rootfs: link inside", imageAt("{rootfs: tree-link}"), nil},
		{"rootfs: tree holding a link out", imageAt("{rootfs: conf/tree}"), nil},
		{"archive: absolute", imageAt("{archive: " + secret + "}"), []string{
			at + `archive: ` + secret + ` is an absolute path: write it relative to the group file's directory`}},
		{"archive: dot-dot", imageAt("{archive: ../outside/secret}"), []string{
			at + `archive: ../outside/secret is outside the group file's directory`}},
		{"archive: file link, absolute target", imageAt("{archive: abs-link}"), []string{
			at + `archive: abs-link resolves to ` + secret + `, outside the group file's directory`}},
		{"archive: file link, relative target", imageAt("{archive: rel-link}"), []string{
			at + `archive: rel-link resolves to ` + secret + `, outside the group file's directory`}},
		{"archive: under a directory link", imageAt("{archive: dir-link/secret}"), []string{
			at + `archive: dir-link/secret resolves to ` + secret + `, outside the group file's directory`}},
		{"archive: missing", imageAt("{archive: build/nope.tar}"), []string{
			at + `archive: file build/nope.tar does not exist`}},
		{"archive: inside", imageAt("{archive: build/app.tar}"), nil},
		{"defaults", doc(
			"group: demo",
			"defaults:",
			"  image: {rootfs: ../outside/rootfs}",
			"nodes:",
			"  web: {init: none}",
		), []string{`slipway.yaml:3: defaults.image.rootfs: ../outside/rootfs is outside the group file's directory`}},
		{"role service", doc(
			"group: demo",
			"nodes:",
			"  web:",
			"    image: {rootfs: conf/tree}",
			"    roles:",
			"      sso:",
			"        service: {image: {archive: dir-link/secret}}",
		), []string{`slipway.yaml:7: nodes.web.roles.sso.service.image.archive: dir-link/secret resolves to ` + secret + `, outside the group file's directory`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, got := errorLines(t, tt.file, dir)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("group directory reached through a link", func(t *testing.T) {
		viaLink := filepath.Join(filepath.Dir(dir), "group-link")
		g, got := errorLines(t, imageAt("{rootfs: conf/tree}"), viaLink)
		if got != nil {
			t.Fatalf("errors: %v", got)
		}
		if want := filepath.Join(viaLink, "conf", "tree"); g.Nodes[0].Image.Rootfs != want {
			t.Errorf("rootfs = %s, want %s", g.Nodes[0].Image.Rootfs, want)
		}
	})
}
