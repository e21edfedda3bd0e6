package spec_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"slipway.dev/slipway/internal/spec"
)

// testSecret is a TSIG secret of no key anywhere: base64 of "not a real key".
const testSecret = "bm90IGEgcmVhbCBrZXk="

// publishEnv gives the loader a TSIG secret and clears the variables that win over the file,
// so a developer's `dev env` does not change what a test sees.
func publishEnv(t *testing.T) {
	t.Helper()
	t.Setenv(spec.EnvTSIGSecret, testSecret)
	t.Setenv(spec.EnvTSIGSecretFile, "")
	t.Setenv(spec.EnvGateway, "")
	t.Setenv(spec.EnvDNSServer, "")
}

// publishDoc is a group with two nodes and the given `publish:` lines (from line 13).
func publishDoc(publish ...string) string {
	return doc(append([]string{
		"group: demo",
		"nodes:",
		"  web:",
		"    image: {rootfs: nodes/web/rootfs}",
		"    firewall: {served: [80, 443, 22], published: [80, 443], admin: [22]}",
		"    publishedNames: [www.example.org, example.org]",
		"  mx:",
		"    image: {rootfs: nodes/web/rootfs}",
		"    firewall: {served: [25], published: [25]}",
		"    publishedNames: [mx.example.org]",
		"  db:",
		"    image: {rootfs: nodes/web/rootfs}",
	}, publish...)...)
}

func TestParsePublish(t *testing.T) {
	publishEnv(t)
	g, err := spec.Parse("slipway.yaml", []byte(publishDoc(
		"publish:",
		"  zone: example.org.",
		"  gateway: infra/public",
		"  addressTimeout: 2m",
		"  ttl: 60",
		"  dns: {server: 192.0.2.53, key: slipway., algorithm: HMAC-SHA512}",
		"  mail: {relay: mx, spf: 'v=spf1 exp=%{d} \"x\\\\y\" -all', dmarc: \"v=DMARC1 ;p = reject; pct=50\"}",
	)), root)
	if err != nil {
		t.Fatal(err)
	}
	want := &spec.Publish{
		Zone:           "example.org",
		Gateway:        &spec.GatewayRef{Namespace: "infra", Name: "public", From: "slipway.yaml:15"},
		AddressTimeout: 2 * time.Minute,
		TTL:            60,
		DNS:            spec.DNS{Server: "192.0.2.53:53", Key: "slipway", Algorithm: "hmac-sha512"},
		Mail:           &spec.Mail{Relay: "mx", SPF: `v=spf1 exp=%{d} "x\\y" -all`, DMARC: "v=DMARC1 ;p = reject; pct=50"},
		Line:           14,
	}
	if diff := cmp.Diff(want, g.Publish); diff != "" {
		t.Errorf("Publish (-want +got):\n%s", diff)
	}
}

func TestParsePublishDefaultsAndEnvironment(t *testing.T) {
	publishEnv(t)
	t.Setenv(spec.EnvGateway, "slipway-dev/public")
	t.Setenv(spec.EnvDNSServer, "127.0.0.1:5353")
	g, err := spec.Parse("slipway.yaml", []byte(publishDoc(
		"publish:",
		"  zone: example.org",
		"  gateway: infra/public",
		"  dns: {server: 192.0.2.53:53, key: slipway}",
	)), root)
	if err != nil {
		t.Fatal(err)
	}
	want := &spec.Publish{
		Zone:           "example.org",
		Gateway:        &spec.GatewayRef{Namespace: "slipway-dev", Name: "public", From: spec.EnvGateway},
		AddressTimeout: spec.DefaultAddressTimeout,
		TTL:            spec.DefaultTTL,
		DNS:            spec.DNS{Server: "127.0.0.1:5353", Key: "slipway", Algorithm: spec.DefaultTSIGAlgorithm},
		Line:           14,
	}
	if diff := cmp.Diff(want, g.Publish); diff != "" {
		t.Errorf("Publish (-want +got):\n%s", diff)
	}
	if g2, _ := spec.Parse("slipway.yaml", []byte(publishDoc()), root); g2.Publish != nil {
		t.Errorf("a file without publish: has Publish %+v, want nil", g2.Publish)
	}
}

func TestParsePublishInvalid(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		publish []string
		want    []string
	}{
		{"name outside the zone, relay without names, zone and dns required", nil, []string{
			"publish:",
			"  zone: example.com",
			"  mail: {relay: db}",
		}, []string{
			`slipway.yaml:6: nodes.web.publishedNames[0]: name www.example.org is not in the zone example.com (publish.zone)`,
			`slipway.yaml:6: nodes.web.publishedNames[1]: name example.org is not in the zone example.com (publish.zone)`,
			`slipway.yaml:10: nodes.mx.publishedNames[0]: name mx.example.org is not in the zone example.com (publish.zone)`,
			`slipway.yaml:14: publish.dns: is required`,
			`slipway.yaml:15: publish.mail.relay: node db has no publishedNames (the MX record points at its first)`,
		}},
		{"bad values", nil, []string{
			"publish:",
			"  zone: Example_org",
			"  gateway: public",
			"  addressTimeout: 0s",
			"  ttl: 0",
			"  dns: {server: 'host:port', key: 'a b', algorithm: md5, secret: x}",
			"  mail: {relay: nobody, spf: 'v=\"x\"'}",
		}, []string{
			`slipway.yaml:14: publish.zone: "Example_org" is not a DNS name`,
			`slipway.yaml:15: publish.gateway: "public" is not <namespace>/<name> (a namespace and a Gateway name)`,
			`slipway.yaml:16: publish.addressTimeout: duration 0s must be more than 0`,
			`slipway.yaml:17: publish.ttl: ttl 0 is out of range (1-2147483647 seconds)`,
			`slipway.yaml:18: publish.dns.algorithm: "md5" is not one of hmac-sha256, hmac-sha384, hmac-sha512, hmac-sha224, hmac-sha1`,
			`slipway.yaml:18: publish.dns.key: "a b" is not a TSIG key name (a DNS name)`,
			`slipway.yaml:18: publish.dns.secret: unknown field "secret"`,
			`slipway.yaml:18: publish.dns.server: "host:port" is not host:port (e.g. 192.0.2.53:53)`,
			`slipway.yaml:19: publish.mail.relay: node nobody is not in the group`,
			`slipway.yaml:19: publish.mail.spf: "v=\"x\"" is not an SPF record: it must start with "v=spf1" and a space (RFC 7208)`,
		}},
		// Issue 35 item 7: a value the server holds otherwise than written, or that is no
		// SPF or DMARC record, validated and then was published again by every apply.
		{"mail records that are not SPF or DMARC", nil, []string{
			"publish:",
			"  zone: example.org",
			"  dns: {key: slipway, server: ns.example.org:53}",
			"  mail:",
			"    relay: mx",
			"    spf: \"v=spf1 a:café.example.org -all\"",
			"    dmarc: \"v=DMARC1; rua=mailto:d@example.org\"",
		}, []string{
			`slipway.yaml:18: publish.mail.spf: "v=spf1 a:café.example.org -all" must be printable ASCII, not 'é' (at byte 12)`,
			`slipway.yaml:19: publish.mail.dmarc: "v=DMARC1; rua=mailto:d@example.org" has no policy: it needs a tag "p=none", "p=quarantine" or "p=reject" (RFC 7489)`,
		}},
		{"spf without its version, dmarc with another first tag", nil, []string{
			"publish:",
			"  zone: example.org",
			"  dns: {key: slipway, server: ns.example.org:53}",
			"  mail: {relay: mx, spf: \"mx -all\", dmarc: \"p=none; v=DMARC1\"}",
		}, []string{
			`slipway.yaml:16: publish.mail.dmarc: "p=none; v=DMARC1" is not a DMARC record: its first tag must be "v=DMARC1" (RFC 7489)`,
			`slipway.yaml:16: publish.mail.spf: "mx -all" is not an SPF record: it must start with "v=spf1" and a space (RFC 7208)`,
		}},
		{"environment values that are wrong", map[string]string{spec.EnvGateway: "a/b/c", spec.EnvDNSServer: "x:99999"}, []string{
			"publish:",
			"  zone: example.org",
			"  dns: {key: slipway}",
		}, []string{
			`slipway.yaml:14: publish.gateway: environment variable K8S_GATEWAY "a/b/c" is not <namespace>/<name>`,
			`slipway.yaml:15: publish.dns.server: environment variable SLIPWAY_DNS_SERVER "x:99999" is not host:port`,
		}},
		{"no secret", map[string]string{spec.EnvTSIGSecret: ""}, []string{
			"publish:",
			"  zone: example.org",
			"  dns: {key: slipway}",
		}, []string{
			`slipway.yaml:15: publish.dns: tsig secret: neither SLIPWAY_TSIG_SECRET nor SLIPWAY_TSIG_SECRET_FILE is set`,
			`slipway.yaml:15: publish.dns.server: is required (or set SLIPWAY_DNS_SERVER)`,
		}},
		{"secret not base64", map[string]string{spec.EnvTSIGSecret: "not base64!"}, []string{
			"publish:",
			"  zone: example.org",
			"  dns: {key: slipway, server: ns.example.org:53}",
		}, []string{
			`slipway.yaml:15: publish.dns: tsig secret: environment variable SLIPWAY_TSIG_SECRET: is not base64`,
		}},
		{"a node with names and no port has no address", nil, []string{
			"    publishedNames: [db.example.org]",
			"publish:",
			"  zone: example.org",
			"  dns: {key: slipway, server: ns.example.org:53}",
		}, []string{
			`slipway.yaml:13: nodes.db.publishedNames: a node with published names needs a published port (its Service gets the address the names point at)`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			publishEnv(t)
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			_, err := spec.Parse("slipway.yaml", []byte(publishDoc(tt.publish...)), root)
			var errs spec.Errors
			if !errors.As(err, &errs) {
				t.Fatalf("Parse = %v, want Errors", err)
			}
			var got []string
			for _, e := range errs {
				got = append(got, e.Error())
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}

func TestTSIGSecretFromFile(t *testing.T) {
	publishEnv(t)
	t.Setenv(spec.EnvTSIGSecret, "")
	dir := t.TempDir()
	good, bad := filepath.Join(dir, "good"), filepath.Join(dir, "bad")
	if err := os.WriteFile(good, []byte(testSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte("%%%"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv(spec.EnvTSIGSecretFile, good)
	if s, err := (spec.DNS{}).Secret(); err != nil || s != testSecret {
		t.Errorf("Secret from %s = %v, want the file's value", good, err)
	}
	for _, f := range []string{bad, filepath.Join(dir, "missing")} {
		t.Setenv(spec.EnvTSIGSecretFile, f)
		_, err := (spec.DNS{}).Secret()
		if err == nil || !strings.Contains(err.Error(), f) || strings.Contains(err.Error(), "%%%") {
			t.Errorf("Secret from %s = %v, want an error naming the file and not the value", f, err)
		}
	}
}

func TestAddressModeOf(t *testing.T) {
	tcp := func(ns ...int32) []spec.Port {
		var out []spec.Port
		for _, n := range ns {
			out = append(out, spec.Port{Protocol: spec.TCP, Number: n})
		}
		return out
	}
	gw := &spec.Publish{Gateway: &spec.GatewayRef{Namespace: "infra", Name: "public"}}
	names := []string{"www.example.org"}
	tests := []struct {
		name    string
		publish *spec.Publish
		node    spec.Node
		want    spec.AddressMode
	}{
		{"no publish", nil, spec.Node{PublishedNames: names, Firewall: spec.Firewall{Published: tcp(443)}}, spec.NotPublished},
		{"no names", gw, spec.Node{Firewall: spec.Firewall{Published: tcp(443)}}, spec.NotPublished},
		{"443 only", gw, spec.Node{PublishedNames: names, Firewall: spec.Firewall{Published: tcp(443)}}, spec.BehindGateway},
		{"80 and 443, admin 22", gw, spec.Node{PublishedNames: names, Firewall: spec.Firewall{Published: tcp(80, 443), Admin: tcp(22)}}, spec.BehindGateway},
		{"80 without 443", gw, spec.Node{PublishedNames: names, Firewall: spec.Firewall{Published: tcp(80)}}, spec.OwnAddress},
		{"443 and 25", gw, spec.Node{PublishedNames: names, Firewall: spec.Firewall{Published: tcp(443, 25)}}, spec.OwnAddress},
		{"udp 443", gw, spec.Node{PublishedNames: names, Firewall: spec.Firewall{Published: []spec.Port{{Protocol: spec.TCP, Number: 443}, {Protocol: spec.UDP, Number: 443}}}}, spec.OwnAddress},
		{"no gateway", &spec.Publish{}, spec.Node{PublishedNames: names, Firewall: spec.Firewall{Published: tcp(443)}}, spec.OwnAddress},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := spec.AddressModeOf(tt.publish, &tt.node); got != tt.want {
				t.Errorf("AddressModeOf = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestParseNameOnTwoNodes: a published name on two nodes is refused at load, at the later one,
// naming the node that has it first (issue 35, item 10), with or without `publish:`.
func TestParseNameOnTwoNodes(t *testing.T) {
	publishEnv(t)
	nodes := []string{
		"group: demo",
		"nodes:",
		"  web:",
		"    image: {rootfs: nodes/web/rootfs}",
		"    firewall: {served: [443], published: [443]}",
		"    publishedNames: [www.example.org, example.org]",
		"  api:",
		"    image: {rootfs: nodes/web/rootfs}",
		"    firewall: {served: [443], published: [443]}",
		"    publishedNames: [api.example.org, www.example.org]",
	}
	want := []string{`slipway.yaml:10: nodes.api.publishedNames[1]: name www.example.org is also published by node web (line 6): a name belongs to one node`}
	tests := []struct {
		name  string
		lines []string
	}{
		{"operator form", append(slices.Clone(nodes), "publish: {zone: example.org, dns: {server: 192.0.2.53, key: k}}")},
		{"without publish", nodes},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { checkErrors(t, doc(tt.lines...), want) })
	}
	t.Run("from defaults", func(t *testing.T) {
		checkErrors(t, doc(
			"group: demo",
			"defaults:",
			"  firewall: {served: [443], published: [443]}",
			"  publishedNames: [www.example.org]",
			"nodes:",
			"  web: {image: {rootfs: nodes/web/rootfs}}",
			"  api: {image: {rootfs: nodes/web/rootfs}}",
			"  db: {image: {rootfs: nodes/web/rootfs}, publishedNames: [db.example.org]}",
		), []string{`slipway.yaml:4: defaults.publishedNames: name www.example.org would be published by every node that inherits it (api, web): a name belongs to one node; set publishedNames on the node`})
	})
}
