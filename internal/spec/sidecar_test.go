package spec_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"slipway.dev/slipway/internal/spec"
)

// sso is a fixture of node web with a server (lines 5-6) and a service role sso (lines 7-10);
// the role's fields under test start on line 11.
func sso(lines ...string) string {
	return web(append([]string{
		"    secretsFrom:",
		"      openbao: {address: http://bao.example:8200}",
		"    roles:",
		"      sso:",
		"        service: {image: {archive: build/sso.tar}}",
		"        sidecarSecrets:",
	}, lines...)...)
}

// TestParseSidecarSecrets: every file form loads with its defaults, sorted by file; the
// server takes its defaults from the node's name.
func TestParseSidecarSecrets(t *testing.T) {
	g, err := spec.Parse("slipway.yaml", []byte(sso(
		"          pw: {path: web/db, key: password, restart: true}",
		"          tls.key: {mount: kv, path: web/tls, key: key_b64, encoding: base64}",
		"          db-url: {path: web/db, key: env, variable: DB_URL}",
		`          app.conf: {path: web/db, template: "password={{ .password }}\n"}`,
		"          "+strings.Repeat("l", 239)+": {path: web/db, key: password}",
		"        companion: true",
	)), root)
	if err != nil {
		t.Fatal(err)
	}
	n := g.Node("web")
	wantServer := &spec.SecretsServer{Address: "http://bao.example:8200", AuthMount: "kubernetes", RoleDefault: true, Audience: "openbao", Poll: 10 * time.Second, Line: 6}
	if diff := cmp.Diff(wantServer, n.SecretsFrom); diff != "" {
		t.Errorf("server (-want +got):\n%s", diff)
	}
	// The default role is the deployment's (issue 46 item 8): node-<node> was every group's.
	other, err := g.ForDeployment(spec.TargetAll, "x7")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		g    *spec.Group
		want string
	}{{g, "slipway." + g.Name + ".web"}, {other, "slipway." + g.Name + ".all.x7.web"}} {
		if got := tt.g.SecretsRole("web", n.SecretsFrom); got != tt.want {
			t.Errorf("default role of %s: %q, want %q", tt.g.Name, got, tt.want)
		}
	}
	r := n.Role("sso")
	want := []spec.SidecarSecret{
		{File: "app.conf", Mount: "secret", Path: "web/db", Template: "password={{ .password }}\n", Line: 14},
		{File: "db-url", Mount: "secret", Path: "web/db", Key: "env", Variable: "DB_URL", Line: 13},
		// The longest name whose temporary file fits in NAME_MAX.
		{File: strings.Repeat("l", 239), Mount: "secret", Path: "web/db", Key: "password", Line: 15},
		{File: "pw", Mount: "secret", Path: "web/db", Key: "password", Restart: true, Line: 11},
		{File: "tls.key", Mount: "kv", Path: "web/tls", Key: "key_b64", Encoding: "base64", Line: 12},
	}
	if diff := cmp.Diff(want, r.SidecarSecrets); diff != "" {
		t.Errorf("secrets (-want +got):\n%s", diff)
	}
	if !r.Companion || !r.NeedsRestart() {
		t.Errorf("companion %v, needs restart %v; want both", r.Companion, r.NeedsRestart())
	}
}

// TestParseSecretsServer: the server's fields and its CA file.
func TestParseSecretsServer(t *testing.T) {
	g, err := spec.Parse("slipway.yaml", []byte(web(
		"    secretsFrom:",
		"      openbao: {address: https://bao:8200, caFile: ca/openbao.pem, authMount: k8s, role: web-role, audience: vault, pollInterval: 2s}",
	)), root)
	if err != nil {
		t.Fatal(err)
	}
	s := g.Node("web").SecretsFrom
	if s.CAPEM == "" || s.CAFile == "" || s.AuthMount != "k8s" || s.Role != "web-role" || s.Audience != "vault" || s.Poll != 2*time.Second {
		t.Errorf("server %+v", s)
	}
}

// TestParseCAPin: caSha256 pins the fetched CA, kept in lowercase hex without its prefix.
func TestParseCAPin(t *testing.T) {
	pin := strings.Repeat("AB", 32)
	g, err := spec.Parse("slipway.yaml", []byte(web(
		"    secretsFrom:",
		"      openbao: {address: https://bao:8200, caFetchUrl: http://pki/ca, caSha256: sha256:"+pin+"}",
	)), root)
	if err != nil {
		t.Fatal(err)
	}
	if got := g.Node("web").SecretsFrom.CASHA256; got != strings.ToLower(pin) {
		t.Errorf("pin %q", got)
	}
}

// TestParseInvalidSidecar: each mistake gives one message at its line.
func TestParseInvalidSidecar(t *testing.T) {
	tests := []struct {
		name string
		file string
		want []string
	}{
		{"neither key nor template", sso("          pw: {path: web/db}"),
			[]string{`slipway.yaml:11: nodes.web.roles.sso.sidecarSecrets.pw: needs key or template`}},
		{"key and template", sso("          pw: {path: web/db, key: a, template: b}"),
			[]string{`slipway.yaml:11: nodes.web.roles.sso.sidecarSecrets.pw.template: set one of key and template, not both`}},
		{"template does not parse", sso(`          pw: {path: web/db, template: "{{ .a "}`),
			[]string{`slipway.yaml:11: nodes.web.roles.sso.sidecarSecrets.pw.template: does not parse: template: pw:1: unclosed action`}},
		{"variable without key", sso(`          pw: {path: web/db, template: x, variable: A}`),
			[]string{`slipway.yaml:11: nodes.web.roles.sso.sidecarSecrets.pw.variable: needs key: the value of key holds the NAME=value lines`}},
		{"variable not a name", sso(`          pw: {path: web/db, key: env, variable: "A B"}`),
			[]string{`slipway.yaml:11: nodes.web.roles.sso.sidecarSecrets.pw.variable: "A B" is not a variable name`}},
		{"encoding not base64", sso(`          pw: {path: web/db, key: a, encoding: hex}`),
			[]string{`slipway.yaml:11: nodes.web.roles.sso.sidecarSecrets.pw.encoding: "hex" is not base64 (the only encoding)`}},
		{"file with a slash", sso(`          a/b: {path: web/db, key: a}`),
			[]string{`slipway.yaml:11: nodes.web.roles.sso.sidecarSecrets.a/b: file name "a/b" has a '/': files lie directly under /run/secrets`}},
		{"hidden file", sso(`          .pw: {path: web/db, key: a}`),
			[]string{`slipway.yaml:11: nodes.web.roles.sso.sidecarSecrets..pw: file name ".pw" starts with '.': the sidecar keeps its own files so`}},
		{"file name too long for its temporary file", sso("          " + strings.Repeat("a", 240) + `: {path: web/db, key: a}`),
			[]string{`slipway.yaml:11: nodes.web.roles.sso.sidecarSecrets.` + strings.Repeat("a", 240) + `: file name "` + strings.Repeat("a", 40) + `…" is 240 bytes long, more than 239: the sidecar writes it through a temporary file .<name>.tmp-*, and a file name has at most 255 bytes`}},
		{"path missing", sso(`          pw: {key: a}`),
			[]string{`slipway.yaml:11: nodes.web.roles.sso.sidecarSecrets.pw.path: is required`}},
		{"path absolute", sso(`          pw: {path: /web/db, key: a}`),
			[]string{`slipway.yaml:11: nodes.web.roles.sso.sidecarSecrets.pw.path: "/web/db" is not a path in the mount (no leading or trailing /)`}},
		{"unknown field", sso(`          pw: {path: web/db, key: a, restrat: true}`),
			[]string{`slipway.yaml:11: nodes.web.roles.sso.sidecarSecrets.pw.restrat: unknown field "restrat"`}},
		{"role without service", web(
			"    secretsFrom: {openbao: {address: http://bao:8200}}",
			"    roles:",
			"      worker:",
			"        sidecarSecrets: {pw: {path: web/db, key: a}}",
			"        companion: true",
		), []string{
			`slipway.yaml:8: nodes.web.roles.worker.sidecarSecrets: needs service: only a role with its own service image has a sidecarSecrets`,
			`slipway.yaml:9: nodes.web.roles.worker.companion: needs service: only a role with its own service image has a companion`,
		}},
		{"node without server", web(
			"    roles:",
			"      sso:",
			"        service: {image: {archive: build/sso.tar}}",
			"        sidecarSecrets: {pw: {path: web/db, key: a}}",
		), []string{`slipway.yaml:8: nodes.web.roles.sso.sidecarSecrets: needs secretsFrom.openbao on node web: the server the sidecar reads from`}},
		{"server without address", web("    secretsFrom: {openbao: {role: x}}"),
			[]string{`slipway.yaml:5: nodes.web.secretsFrom.openbao.address: is required`}},
		{"address not a URL", web("    secretsFrom: {openbao: {address: bao:8200}}"),
			[]string{`slipway.yaml:5: nodes.web.secretsFrom.openbao.address: "bao:8200" is not an http:// or https:// address`}},
		{"both CAs", web("    secretsFrom: {openbao: {address: http://b, caFile: ca/openbao.pem, caFetchUrl: http://pki/ca}}"),
			[]string{`slipway.yaml:5: nodes.web.secretsFrom.openbao.caFetchUrl: set one of caFile and caFetchUrl, not both`}},
		{"CA not a certificate", web("    secretsFrom: {openbao: {address: http://b, caFile: conf/app.conf}}"),
			[]string{`slipway.yaml:5: nodes.web.secretsFrom.openbao.caFile: conf/app.conf holds no PEM certificate`}},
		{"CA pin not a digest", web("    secretsFrom: {openbao: {address: https://b, caFetchUrl: http://pki/ca, caSha256: abc}}"),
			[]string{`slipway.yaml:5: nodes.web.secretsFrom.openbao.caSha256: "abc" is not a SHA-256 digest (64 hex digits, as ` + "`sha256sum`" + ` prints)`}},
		{"CA pin without a fetched CA", web("    secretsFrom: {openbao: {address: https://b, caFile: ca/openbao.pem, caSha256: " + strings.Repeat("ab", 32) + "}}"),
			[]string{`slipway.yaml:5: nodes.web.secretsFrom.openbao.caSha256: needs caFetchUrl: it pins the CA fetched from there (a caFile is trusted as it is)`}},
		{"poll too short", web("    secretsFrom: {openbao: {address: http://b, pollInterval: 100ms}}"),
			[]string{`slipway.yaml:5: nodes.web.secretsFrom.openbao.pollInterval: 100ms is shorter than 1s`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { checkErrors(t, tt.file, tt.want) })
	}
}
