package spec_test

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"slipway.dev/slipway/internal/spec"
)

const hostKey = "[127.0.0.1]:2222 ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl"

// spireDoc is a group with one node and the given `spire:` lines (from line 5).
func spireDoc(lines ...string) string {
	return doc(append([]string{
		"group: demo",
		"nodes:",
		"  web:",
		"    image: {rootfs: nodes/web/rootfs}",
	}, lines...)...)
}

func TestParseSpire(t *testing.T) {
	g, err := spec.Parse("slipway.yaml", []byte(spireDoc(
		"spire:",
		"  server: spire.example.org:8081",
		"  trustDomain: example.org",
		"  ssh: admin@spire.example.org",
		"  hostKey: '"+hostKey+"'",
		"  configDir: /etc/spire/server",
	)), root)
	if err != nil {
		t.Fatal(err)
	}
	want := &spec.Spire{Server: "spire.example.org:8081", TrustDomain: "example.org",
		SSH: spec.SSHTarget{User: "admin", Host: "spire.example.org", Port: 22}, HostKey: hostKey,
		ConfigDir: "/etc/spire/server", PIDFile: "/etc/spire/server/spire-server.pid",
		TokenPath: spec.DefaultSpireTokenPath, Line: 6}
	if d := cmp.Diff(want, g.Spire); d != "" {
		t.Errorf("spire (-want +got):\n%s", d)
	}
	if g2, _ := spec.Parse("slipway.yaml", []byte(spireDoc()), root); g2.Spire != nil {
		t.Errorf("a file without spire: has Spire %+v", g2.Spire)
	}
}

func TestParseSpireInvalid(t *testing.T) {
	for _, tc := range []struct {
		name  string
		lines []string
		want  []string
	}{
		{"required", []string{"spire: {}"}, []string{
			`slipway.yaml:5: spire.configDir: is required`,
			`slipway.yaml:5: spire.hostKey: is required: the spire node's host key is checked`,
			`slipway.yaml:5: spire.server: is required`,
			`slipway.yaml:5: spire.ssh: is required`,
			`slipway.yaml:5: spire.trustDomain: is required`,
		}},
		{"bad values", []string{
			"spire:",
			"  server: spire.example.org",
			"  trustDomain: Example_org",
			"  ssh: spire.example.org:22",
			"  hostKey: 'ssh-ed25519 AAAA'",
			"  configDir: etc/spire",
			"  pidFile: /run/$x.pid",
			"  tokenPath: /var/lib/spire/token",
			"  key: /root/.ssh/id",
		}, []string{
			`slipway.yaml:6: spire.server: "spire.example.org" is not host:port`,
			`slipway.yaml:7: spire.trustDomain: "Example_org" is not a trust domain (a DNS name, lowercase)`,
			`slipway.yaml:8: spire.ssh: "spire.example.org:22" is not user@host:port`,
			"slipway.yaml:9: spire.hostKey: is not one known_hosts line (`[host]:port ssh-ed25519 AAAA…`)",
			`slipway.yaml:10: spire.configDir: "etc/spire" is not a clean absolute path (without quotes, ` + "`$`" + ` or backslashes)`,
			`slipway.yaml:11: spire.pidFile: "/run/$x.pid" is not a clean absolute path (without quotes, ` + "`$`" + ` or backslashes)`,
			`slipway.yaml:12: spire.tokenPath: "/var/lib/spire/token": the token's directory is a volume of its own, not / or under /var/lib, and the file is not bundle.crt`,
			`slipway.yaml:13: spire.key: unknown field "key"`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := spec.Parse("slipway.yaml", []byte(spireDoc(tc.lines...)), root)
			var errs spec.Errors
			if !errors.As(err, &errs) {
				t.Fatalf("Parse = %v, want Errors", err)
			}
			var got []string
			for _, e := range errs {
				got = append(got, e.Error())
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("errors (-want +got):\n%s", d)
			}
		})
	}
}
