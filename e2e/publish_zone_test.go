package e2e

import (
	"slices"
	"strings"
	"testing"
	"time"

	mdns "github.com/miekg/dns"

	"slipway.dev/slipway/internal/devcluster/devtest"
)

// zoneGroup is node www with its own address and one name in {{ZONE}}, on a Knot of the
// test's own that serves two zones; {{PUBLISH}} is false to leave publish: out.
const zoneGroup = `group: {{GROUP}}
{{PUBLISH}}publish:
{{PUBLISH}}  zone: {{ZONE}}
{{PUBLISH}}  addressTimeout: 2m
{{PUBLISH}}  dns: {key: ` + devtest.KnotKey + `}
nodes:
  www:
    image: {rootfs: nodes/www/rootfs}
    init: none
    firewall: {served: [8443], published: [8443]}
    publishedNames: [www.{{ZONE}}]
`

// publish.zone changes: the name published in the old zone is retired there and the new one
// published in the new zone; publish: removed while the state lists a published name is
// refused, naming it (issue 35 item 16).
func TestPublishZoneChange(t *testing.T) {
	t.Parallel()
	server, secret := devtest.Knot(t, "old.test", "new.test")
	g := NewGroup(t, "pubzone", zoneGroup, "www")
	g.WithEnv("SLIPWAY_DNS_SERVER="+server, "SLIPWAY_TSIG_SECRET="+secret, "SLIPWAY_TSIG_SECRET_FILE=", "K8S_GATEWAY=")
	write := func(zone string, publish bool) {
		prefix := ""
		if !publish {
			prefix = "#"
		}
		g.WriteFile("slipway.yaml", strings.NewReplacer("{{GROUP}}", g.Name, "{{ZONE}}", zone, "{{PUBLISH}}", prefix).Replace(zoneGroup))
	}
	queryA := func(name string) []string {
		m := new(mdns.Msg)
		m.SetQuestion(mdns.Fqdn(name), mdns.TypeA)
		r, _, err := (&mdns.Client{Net: "tcp", Timeout: 10 * time.Second}).Exchange(m, server)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, rr := range r.Answer {
			if a, ok := rr.(*mdns.A); ok {
				out = append(out, a.A.String())
			}
		}
		return out
	}
	write("old.test", true)
	g.MustRun(0, "apply", "--yes")
	addr := queryA("www.old.test")
	if len(addr) != 1 {
		t.Fatalf("www.old.test after the first apply: A %v, want the node's address", addr)
	}

	write("new.test", true)
	r := g.MustRun(0, "plan")
	if !strings.Contains(r.Stdout, "retire dns www.old.test") {
		t.Errorf("plan after the zone changed does not retire www.old.test:\n%s", r)
	}
	g.MustRun(0, "apply", "--yes")
	if got := queryA("www.old.test"); len(got) != 0 {
		t.Errorf("www.old.test after the zone changed: A %v, want none", got)
	}
	if got := queryA("www.new.test"); !slices.Equal(got, addr) {
		t.Errorf("www.new.test: A %v, want %v", got, addr)
	}
	g.MustRun(0, "plan", "--detailed-exitcode")

	write("new.test", false)
	for _, verb := range [][]string{{"plan"}, {"apply", "--yes"}, {"destroy", "--yes"}} {
		r := g.MustRun(1, verb...)
		if !strings.Contains(r.Stderr, "www.new.test") || !strings.Contains(r.Stderr, "publish:") {
			t.Errorf("%s without publish: does not refuse naming www.new.test:\n%s", verb[0], r)
		}
	}
	if got := queryA("www.new.test"); !slices.Equal(got, addr) {
		t.Errorf("www.new.test after the refusals: A %v, want %v untouched", got, addr)
	}
	write("new.test", true)
	g.MustRun(0, "destroy", "--yes")
	if got := queryA("www.new.test"); len(got) != 0 {
		t.Errorf("www.new.test after destroy: A %v, want none", got)
	}
}
