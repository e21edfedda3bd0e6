package spec_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"slipway.dev/slipway/internal/spec"
)

// ssoCentral is sso with the sidecar's files from line 11 and a central section with a login
// a, an entry token and a key pair app after them.
func ssoCentral(files ...string) string {
	return sso(append(files,
		"central:",
		"  logins: {a: {}}",
		"  kv: {token: {generate: {length: 16}}}",
		"  s3: {keyPairs: {app: {}}}",
	)...)
}

// TestParseCentralSidecarSecrets: a file names a login, an entry or a key pair of central:
// by its key; the sidecar's mount and path come from the deployment, not the file.
func TestParseCentralSidecarSecrets(t *testing.T) {
	g, err := spec.Parse("slipway.yaml", []byte(ssoCentral(
		"          user: {login: a, key: username}",
		"          token: {entry: token}",
		"          s3-secret: {s3KeyPair: app, key: secret_key}",
		`          s3.env: {s3KeyPair: app, template: "AWS_ACCESS_KEY_ID={{ .access_key }}\nAWS_SECRET_ACCESS_KEY={{ .secret_key }}\n"}`,
	)), root)
	if err != nil {
		t.Fatal(err)
	}
	want := []spec.SidecarSecret{
		{File: "s3-secret", Mount: "secret", Key: "secret_key", S3KeyPair: "app", Line: 13},
		{File: "s3.env", Mount: "secret", Template: "AWS_ACCESS_KEY_ID={{ .access_key }}\nAWS_SECRET_ACCESS_KEY={{ .secret_key }}\n", S3KeyPair: "app", Line: 14},
		{File: "token", Mount: "secret", Key: "value", Entry: "token", Line: 12},
		{File: "user", Mount: "secret", Key: "username", Login: "a", Line: 11},
	}
	if d := cmp.Diff(want, g.Node("web").Role("sso").SidecarSecrets); d != "" {
		t.Errorf("sidecar secrets (-want +got):\n%s", d)
	}
}

// TestParseInvalidCentralSidecarSecrets: an unknown login, entry or key pair, a wrong key,
// a mount or path beside them, or two of them, each give one message at the file's line.
func TestParseInvalidCentralSidecarSecrets(t *testing.T) {
	const at = `slipway.yaml:11: nodes.web.roles.sso.sidecarSecrets.f`
	for _, tc := range []struct {
		name, file string
		want       []string
	}{
		{"unknown key pair", ssoCentral("          f: {s3KeyPair: nope, key: secret_key}"),
			[]string{at + `.s3KeyPair: "nope" is not a key pair of central.s3.keyPairs`}},
		{"key pair without central.s3", sso("          f: {s3KeyPair: app, key: secret_key}", "central: {logins: {a: {}}}"),
			[]string{at + `.s3KeyPair: "app" is not a key pair of central.s3.keyPairs`}},
		{"key pair without central", sso("          f: {s3KeyPair: app, key: access_key}"),
			[]string{at + `.s3KeyPair: "app" is not a key pair of central.s3.keyPairs`}},
		{"key pair's key", ssoCentral("          f: {s3KeyPair: app, key: password}"),
			[]string{at + `.key: "password" is not access_key or secret_key`}},
		{"key pair without key", ssoCentral("          f: {s3KeyPair: app}"),
			[]string{at + `: needs key (access_key or secret_key) or template`}},
		{"key pair with path", ssoCentral("          f: {s3KeyPair: app, key: secret_key, mount: kv, path: a/b}"),
			[]string{at + `.mount: is set by login, entry or s3KeyPair (the deployment's own name): leave it out`,
				at + `.path: is set by login, entry or s3KeyPair (the deployment's own name): leave it out`}},
		{"key pair and login", ssoCentral("          f: {login: a, s3KeyPair: app, key: username}"),
			[]string{at + `.s3KeyPair: set one of login, entry and s3KeyPair, not login and s3KeyPair`}},
		{"key pair and entry", ssoCentral("          f: {entry: token, s3KeyPair: app, key: value}"),
			[]string{at + `.s3KeyPair: set one of login, entry and s3KeyPair, not entry and s3KeyPair`}},
		{"key pair with variable", ssoCentral("          f: {s3KeyPair: app, key: secret_key, variable: X}"),
			[]string{at + `.variable: is for a KV secret's env-style value, not login, entry or s3KeyPair`}},
		{"unknown login", ssoCentral("          f: {login: b, key: username}"),
			[]string{at + `.login: "b" is not a login of central.logins`}},
	} {
		t.Run(tc.name, func(t *testing.T) { checkErrors(t, tc.file, tc.want) })
	}
}
