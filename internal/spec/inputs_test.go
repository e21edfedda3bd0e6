package spec_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"slipway.dev/slipway/internal/spec"
)

// errorLines parses file in dir and returns its errors one per line; nil when it loads.
func errorLines(t *testing.T, file, dir string) (*spec.Group, []string) {
	t.Helper()
	g, err := spec.Parse("slipway.yaml", []byte(file), dir)
	if err == nil {
		return g, nil
	}
	var errs spec.Errors
	if !errors.As(err, &errs) {
		t.Fatalf("Parse error is %T, not spec.Errors: %v", err, err)
	}
	var out []string
	for _, e := range errs {
		out = append(out, e.Error())
	}
	if err.Error() != strings.Join(out, "\n") {
		t.Errorf("Errors.Error() = %q, want the lines joined", err.Error())
	}
	return nil, out
}

// contextDir makes a group directory with links out of it and into it, beside a file and a
// directory that are not the group's, and returns the group directory and the outside one.
func contextDir(t *testing.T) (dir, outside string) {
	t.Helper()
	top := t.TempDir()
	dir, outside = filepath.Join(top, "group"), filepath.Join(top, "outside")
	for _, d := range []string{filepath.Join(dir, "conf", "tree"), outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	files := map[string]string{
		filepath.Join(outside, "secret"):         "not the group's",
		filepath.Join(dir, "conf", "app.conf"):   "x=1",
		filepath.Join(dir, "conf", "tree", "ok"): "ok",
	}
	for p, s := range files {
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	links := map[string]string{
		filepath.Join(dir, "abs-link"):            filepath.Join(outside, "secret"),
		filepath.Join(dir, "rel-link"):            "../outside/secret",
		filepath.Join(dir, "dir-link"):            "../outside",
		filepath.Join(dir, "inside-link"):         "conf/app.conf",
		filepath.Join(dir, "dangling"):            "nope",
		filepath.Join(dir, "conf", "tree", "out"): filepath.Join(outside, "secret"), // stays a link
		filepath.Join(top, "group-link"):          "group",
	}
	for p, target := range links {
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
	}
	return dir, outside
}

func baseAdd(lines ...string) string {
	return doc(append([]string{
		"group: demo",
		"nodes:",
		"  web:",
		"    image:",
		"      base: registry.example/base:1",
		"      add:",
	}, lines...)...)
}

func TestAddSourceStaysInGroupDirectory(t *testing.T) {
	dir, outside := contextDir(t)
	secret := filepath.Join(outside, "secret")
	tests := []struct {
		name string
		add  string
		want []string
	}{
		{"absolute path", "        - {src: " + secret + ", dst: /etc/x}", []string{
			`slipway.yaml:7: nodes.web.image.add[0].src: ` + secret + ` is an absolute path: write it relative to the group file's directory`,
		}},
		{"dot-dot path", "        - {src: ../outside/secret, dst: /etc/x}", []string{
			`slipway.yaml:7: nodes.web.image.add[0].src: ../outside/secret is outside the group file's directory`,
		}},
		{"link with an absolute target", "        - {src: abs-link, dst: /etc/x}", []string{
			`slipway.yaml:7: nodes.web.image.add[0].src: abs-link resolves to ` + secret + `, outside the group file's directory`,
		}},
		{"link with a relative target", "        - {src: rel-link, dst: /etc/x}", []string{
			`slipway.yaml:7: nodes.web.image.add[0].src: rel-link resolves to ` + secret + `, outside the group file's directory`,
		}},
		{"file under a directory link", "        - {src: dir-link/secret, dst: /etc/x}", []string{
			`slipway.yaml:7: nodes.web.image.add[0].src: dir-link/secret resolves to ` + secret + `, outside the group file's directory`,
		}},
		{"directory link", "        - {src: dir-link, dst: /etc/x}", []string{
			`slipway.yaml:7: nodes.web.image.add[0].src: dir-link resolves to ` + outside + `, outside the group file's directory`,
		}},
		{"dangling link", "        - {src: dangling, dst: /etc/x}", []string{
			`slipway.yaml:7: nodes.web.image.add[0].src: dangling is a link to nothing (no such file or directory)`,
		}},
		{"link inside", "        - {src: inside-link, dst: /etc/x}", nil},
		{"directory holding a link out", "        - {src: conf/tree, dst: /etc/tree}", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, got := errorLines(t, baseAdd(tt.add), dir)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("group directory reached through a link", func(t *testing.T) {
		viaLink := filepath.Join(filepath.Dir(dir), "group-link")
		g, got := errorLines(t, baseAdd("        - {src: conf/app.conf, dst: /etc/app.conf}"), viaLink)
		if got != nil {
			t.Fatalf("errors: %v", got)
		}
		if want := filepath.Join(viaLink, "conf", "app.conf"); g.Nodes[0].Image.Add[0].Src != want {
			t.Errorf("src = %s, want %s", g.Nodes[0].Image.Add[0].Src, want)
		}
	})
}

func TestAddDestinationDirectory(t *testing.T) {
	tests := []struct {
		name, add string
		want      []spec.AddFile
		errs      []string
	}{
		{"file into a directory", "        - {src: build/file.txt, dst: /etc/}",
			[]spec.AddFile{{Src: "build/file.txt", Dst: "/etc/file.txt"}}, nil},
		{"directory into a directory", "        - {src: nodes/web/rootfs/, dst: /opt/app/}",
			[]spec.AddFile{{Src: "nodes/web/rootfs", Dst: "/opt/app/rootfs"}}, nil},
		{"file path kept", "        - {src: build/file.txt, dst: /etc/motd}",
			[]spec.AddFile{{Src: "build/file.txt", Dst: "/etc/motd"}}, nil},
		{"group directory onto the root", "        - {src: ., dst: /}", nil,
			[]string{`slipway.yaml:7: nodes.web.image.add[0].dst: "/" with source . is the image's root: name a directory or a file under it`}},
	}
	abs, _ := filepath.Abs(root)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, errs := errorLines(t, baseAdd(tt.add), root)
			if diff := cmp.Diff(tt.errs, errs); diff != "" {
				t.Fatalf("errors (-want +got):\n%s", diff)
			}
			if g == nil {
				return
			}
			for i := range tt.want {
				tt.want[i].Src = filepath.Join(abs, tt.want[i].Src)
			}
			if diff := cmp.Diff(tt.want, g.Nodes[0].Image.Add); diff != "" {
				t.Errorf("add (-want +got):\n%s", diff)
			}
		})
	}
}

func TestMergeKeys(t *testing.T) {
	g, errs := errorLines(t, doc(
		"group: demo",
		"defaults:",
		"  env: {ZONE: a}",
		"nodes:",
		"  web: &web",
		"    image: {rootfs: nodes/web/rootfs}",
		"    env: &env {TZ: UTC, LANG: C}",
		"    firewall: &fw {served: [80, 443], published: [443]}",
		"    rolloutTimeout: 2m",
		"  api:",
		"    <<: *web",
		"    rolloutTimeout: 3m",
		"    env:",
		"      <<: *env",
		"      LANG: C.UTF-8",
		"  db:",
		"    <<: [{init: none}, *web]",
		"    firewall:",
		"      <<: *fw",
		"      published: [80]",
	), root)
	if errs != nil {
		t.Fatalf("errors: %v", errs)
	}
	api, db := g.Node("api"), g.Node("db")
	checks := []struct {
		name      string
		got, want any
	}{
		{"api image from web", api.Image.Rootfs, g.Node("web").Image.Rootfs},
		{"api own key wins", api.RolloutTimeout.String(), "3m0s"},
		{"api env merged, own key wins, defaults below", api.Env, map[string]string{"TZ": "UTC", "LANG": "C.UTF-8", "ZONE": "a"}},
		{"api firewall from web", api.Firewall.Served, []spec.Port{{Protocol: spec.TCP, Number: 80}, {Protocol: spec.TCP, Number: 443}}},
		{"db first source wins", db.Init, spec.InitNone},
		{"db later source", db.RolloutTimeout.String(), "2m0s"},
		{"db firewall own published", db.Firewall.Published, []spec.Port{{Protocol: spec.TCP, Number: 80}}},
	}
	for _, c := range checks {
		if diff := cmp.Diff(c.want, c.got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", c.name, diff)
		}
	}
}

func TestMergeKeyErrors(t *testing.T) {
	tests := []struct {
		name, file string
		want       []string
	}{
		{"merge of a scalar", doc(
			"group: demo",
			"nodes:",
			"  web:",
			"    <<: 5",
			"    image: {rootfs: nodes/web/rootfs}",
		), []string{`slipway.yaml:4: nodes.web.<<: a merge key takes a mapping or a list of mappings, not an integer`}},
		{"unknown field merged in", doc(
			"group: demo",
			"nodes:",
			"  web: &web",
			"    image: {rootfs: nodes/web/rootfs}",
			"    colour: red",
			"  api:",
			"    <<: *web",
		), []string{
			`slipway.yaml:5: nodes.api.colour: unknown field "colour"`,
			`slipway.yaml:5: nodes.web.colour: unknown field "colour"`,
		}},
		{"quoted << is a plain key", doc(
			"group: demo",
			"nodes:",
			"  web:",
			"    image: {rootfs: nodes/web/rootfs}",
			"    '<<': {init: none}",
		), []string{`slipway.yaml:5: nodes.web.<<: unknown field "<<"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, got := errorLines(t, tt.file, root)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}

func TestEmptyDocuments(t *testing.T) {
	body := "group: demo\nnodes:\n  web: {image: {rootfs: nodes/web/rootfs}}\n"
	tests := []struct {
		name, file string
		want       []string
	}{
		{"trailing ---", body + "---\n", nil},
		{"trailing --- and a comment", body + "---\n# nothing here\n", nil},
		{"leading empty documents", "---\n---\n" + body, nil},
		{"document end marker", body + "...\n", nil},
		{"two documents", body + "---\n" + body, []string{`slipway.yaml:4: the file has more than one YAML document`}},
		{"only empty documents", "---\n# x\n---\n", []string{`slipway.yaml: the file is empty`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, got := errorLines(t, tt.file, root)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}
