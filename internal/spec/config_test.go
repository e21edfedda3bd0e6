package spec_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"slipway.dev/slipway/internal/spec"
)

// TestParseInvalidConfig: each bad value of env references, files, config and secrets
// (SPEC §3a) gives one exact message at its line.
func TestParseInvalidConfig(t *testing.T) {
	t.Setenv("SLIPWAY_TEST_TOKEN", "x")
	tests := []struct {
		name string
		file string
		want []string
	}{
		{"secret name not a DNS subdomain", web(
			"    env: {DB: {secret: DB_Creds, key: password}}",
		), []string{`slipway.yaml:5: nodes.web.env.DB.secret: "DB_Creds" is not a DNS subdomain (lowercase letters, digits, '-' and '.')`}},
		{"reference naming both kinds", web(
			"    env: {DB: {secret: db, config: db, key: password}}",
		), []string{`slipway.yaml:5: nodes.web.env.DB: sets both secret and config: name one`}},
		{"reference without a key", web(
			"    env: {DB: {secret: db}}",
		), []string{`slipway.yaml:5: nodes.web.env.DB.key: is required`}},
		{"env not a mapping", web(
			"    env: [DB]",
		), []string{`slipway.yaml:5: nodes.web.env: must be a mapping, not a list`}},
		{"misspelt reference key: one message", web(
			"    env: {DB: {secret: db, kee: password}}",
		), []string{`slipway.yaml:5: nodes.web.env.DB.kee: unknown field "kee"`}},
		{"misspelt reference kind: one message", web(
			"    env: {DB: {secrett: db, key: password}}",
		), []string{`slipway.yaml:5: nodes.web.env.DB.secrett: unknown field "secrett"`}},
		{"files not a list", web(
			"    files: {path: /etc/app, secret: app}",
		), []string{`slipway.yaml:5: nodes.web.files: must be a list, not a mapping`}},
		{"misspelt mount field: one message", web(
			"    files: [{path: /etc/app, secrett: app}]",
		), []string{`slipway.yaml:5: nodes.web.files[0].secrett: unknown field "secrett"`}},
		{"mounted Secret name not a DNS subdomain", web(
			"    files: [{path: /etc/app, secret: Bad_Name}]",
		), []string{`slipway.yaml:5: nodes.web.files[0].secret: "Bad_Name" is not a DNS subdomain (lowercase letters, digits, '-' and '.')`}},
		{"config not a mapping", web(
			"    config: [app]",
		), []string{`slipway.yaml:5: nodes.web.config: must be a mapping, not a list`}},
		{"misspelt config files: one message", web(
			"    config:",
			"      app: {file: {app.conf: conf/app.conf}}",
		), []string{`slipway.yaml:6: nodes.web.config.app.file: unknown field "file"`}},
		{"secrets not a mapping", web(
			"    secrets: [app]",
		), []string{`slipway.yaml:5: nodes.web.secrets: must be a mapping, not a list`}},
		{"misspelt secret source: one message", web(
			"    secrets:",
			"      app: {fromEnvs: {token: SLIPWAY_TEST_TOKEN}}",
		), []string{`slipway.yaml:6: nodes.web.secrets.app.fromEnvs: unknown field "fromEnvs"`}},
		{"fromEnv not a mapping", web(
			"    secrets:",
			"      app: {fromEnv: [SLIPWAY_TEST_TOKEN]}",
		), []string{`slipway.yaml:6: nodes.web.secrets.app.fromEnv: must be a mapping, not a list`}},
		{"unknown reference field", web(
			"    env: {DB: {secret: db, key: password, optional: true}}",
		), []string{`slipway.yaml:5: nodes.web.env.DB.optional: unknown field "optional"`}},
		{"duplicate mount path", web(
			"    files:",
			"      - {path: /etc/tls, secret: web-tls}",
			"      - {path: /etc/tls/, config: app}",
		), []string{`slipway.yaml:7: nodes.web.files[1].path: path /etc/tls is mounted twice (first at line 6)`}},
		{"mount path under /var/lib", web(
			"    files: [{path: /var/lib/app, secret: web-tls}]",
		), []string{`slipway.yaml:5: nodes.web.files[0].path: /var/lib/app is under /var/lib, the node's state claim`}},
		{"mount path that is /run itself", web(
			"    files: [{path: /run/, secret: web-tls}]",
		), []string{`slipway.yaml:5: nodes.web.files[0].path: /run/ would hide the whole of /run, which the node writes to: mount it in a directory under it (e.g. /run/secrets/app)`}},
		{"mount path that is /tmp itself", web(
			"    files: [{path: /tmp, secret: web-tls}]",
		), []string{`slipway.yaml:5: nodes.web.files[0].path: /tmp would hide the whole of /tmp, which the node writes to: mount it in a directory under it (e.g. /tmp/secrets/app)`}},
		{"relative mount path", web(
			"    files: [{path: etc/tls, secret: web-tls}]",
		), []string{`slipway.yaml:5: nodes.web.files[0].path: "etc/tls" is not an absolute path`}},
		{"missing fromEnv variable", web(
			"    secrets:",
			"      app: {fromEnv: {token: SLIPWAY_TEST_UNSET_TOKEN}}",
		), []string{`slipway.yaml:6: nodes.web.secrets.app.fromEnv.token: environment variable SLIPWAY_TEST_UNSET_TOKEN is not set`}},
		{"missing fromFile file", web(
			"    secrets:",
			"      app: {fromFile: {key.pem: keys/none.pem}}",
		), []string{`slipway.yaml:6: nodes.web.secrets.app.fromFile.key.pem: file keys/none.pem cannot be read: no such file or directory`}},
		{"secret without a source", web(
			"    secrets:",
			"      app: {}",
		), []string{`slipway.yaml:6: nodes.web.secrets.app: needs fromEnv or fromFile`}},
		{"secret name not a DNS label", web(
			"    secrets:",
			"      App: {fromEnv: {token: SLIPWAY_TEST_TOKEN}}",
		), []string{`slipway.yaml:6: nodes.web.secrets.App: name "App" is not a DNS label (lowercase letters, digits and '-', starting and ending with a letter or digit, at most 63 characters)`}},
		{"config file outside the group directory", web(
			"    config:",
			"      app: {files: {app.conf: ../app.conf}}",
		), []string{`slipway.yaml:6: nodes.web.config.app.files.app.conf: ../app.conf is outside the group file's directory`}},
		{"config file missing", web(
			"    config:",
			"      app: {files: {app.conf: conf/none.conf}}",
		), []string{`slipway.yaml:6: nodes.web.config.app.files.app.conf: conf/none.conf does not exist`}},
		{"bad data key", web(
			"    config:",
			"      app: {files: {\"a/b\": conf/app.conf}}",
		), []string{`slipway.yaml:6: nodes.web.config.app.files.a/b: "a/b" is not a file name of a ConfigMap or Secret (letters, digits, '-', '_' and '.')`}},
		{"reference to a missing key of the node's own config", web(
			"    config:",
			"      app: {files: {app.conf: conf/app.conf}}",
			"    env: {LEVEL: {config: app, key: level}}",
		), []string{`slipway.yaml:7: nodes.web.env.LEVEL: config app has no key level`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { checkErrors(t, tt.file, tt.want) })
	}
}

// TestLoadConfig: a valid file's references, files, config and secrets; a secret keeps its
// sources and a hash, never the value.
func TestLoadConfig(t *testing.T) {
	const value = "s3cr3t-value"
	t.Setenv("SLIPWAY_TEST_TOKEN", value)
	g, err := spec.Parse("slipway.yaml", []byte(web(
		"    env:",
		"      TZ: UTC",
		"      DB: {secret: db, key: password}",
		"    files:",
		"      - {path: /etc/app, config: app}",
		"    config:",
		"      app: {files: {app.conf: conf/app.conf}}",
		"    secrets:",
		"      app: {fromEnv: {token: SLIPWAY_TEST_TOKEN}}",
	)), root)
	if err != nil {
		t.Fatal(err)
	}
	n := g.Node("web")
	if diff := cmp.Diff(map[string]string{"TZ": "UTC"}, n.Env); diff != "" {
		t.Errorf("Env (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]spec.EnvRef{"DB": {Secret: "db", Key: "password", Line: 7}}, n.EnvRefs); diff != "" {
		t.Errorf("EnvRefs (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]spec.FileMount{{Path: "/etc/app", Config: "app", Line: 9}}, n.Files); diff != "" {
		t.Errorf("Files (-want +got):\n%s", diff)
	}
	if got := n.Config[0].Data["app.conf"]; got != "listen 8080\n" {
		t.Errorf("config data = %q", got)
	}
	s := n.Secrets[0]
	if want := spec.SecretHash("web-app", map[string]string{"token": value}); s.Hash != want {
		t.Errorf("secret hash = %s, want %s", s.Hash, want)
	}
	if strings.Contains(s.Hash, value) || !strings.HasPrefix(s.Hash, "sha256:") {
		t.Errorf("secret hash %q", s.Hash)
	}
	if diff := cmp.Diff(map[string]string{"token": "SLIPWAY_TEST_TOKEN"}, s.FromEnv); diff != "" {
		t.Errorf("FromEnv (-want +got):\n%s", diff)
	}
}

// TestLoadFilesUnderRunAndTmp: SPEC §3a's own example mounts a Secret at /run/secrets/app; a
// path under /run or /tmp loads for either init (issue 35, item 13).
func TestLoadFilesUnderRunAndTmp(t *testing.T) {
	for _, init := range []string{"systemd", "none"} {
		t.Run(init, func(t *testing.T) {
			g, err := spec.Parse("slipway.yaml", []byte(web(
				"    init: "+init,
				"    files:",
				"      - {path: /run/secrets/app, secret: app}",
				"      - {path: /tmp/cache/, config: app}",
			)), root)
			if err != nil {
				t.Fatal(err)
			}
			want := []spec.FileMount{{Path: "/run/secrets/app", Secret: "app", Line: 7}, {Path: "/tmp/cache", Config: "app", Line: 8}}
			if diff := cmp.Diff(want, g.Node("web").Files); diff != "" {
				t.Errorf("Files (-want +got):\n%s", diff)
			}
		})
	}
}
