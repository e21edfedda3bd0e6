package dns_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	mdns "github.com/miekg/dns"

	"slipway.dev/slipway/internal/devcluster/devtest"
	"slipway.dev/slipway/internal/dns"
)

// The zone's SPF on the server (issue 35 item 7): a value with a quote and a backslash reads
// back as it was published (no update forever); another party's SPF beside slipway's is a
// conflict for a publish and stays when slipway's is retired.
func TestSPFBesideAnother(t *testing.T) {
	c, zone, secret := knot(t)
	foreign(t, c, secret, zone+`. 60 IN TXT "site-verification=abc"`)
	spf := &dns.Set{Name: zone, Kind: dns.KindSPF, Values: []string{`v=spf1 mx exp=explain._spf.` + zone + ` "x\y" -all`}, TTL: 300, Node: "mx"}
	if act, err := step(t, c, spf, zone, dns.KindSPF); act != dns.Create || err != nil {
		t.Fatalf("publish spf = %q, %v", act, err)
	}
	if act, err := step(t, c, spf, zone, dns.KindSPF); act != dns.None || err != nil {
		t.Fatalf("publish spf again = %q, %v; want nothing (read back: %v)", act, err, read(t, c, zone, dns.KindSPF))
	}
	foreign(t, c, secret, zone+`. 60 IN TXT "v=spf1 include:other.example -all"`)
	changed := &dns.Set{Name: zone, Kind: dns.KindSPF, Values: []string{"v=spf1 -all"}, TTL: 300, Node: "mx"}
	var ce *dns.ConflictError
	if act, err := step(t, c, changed, zone, dns.KindSPF); act != dns.Conflict || !errors.As(err, &ce) || !ce.OtherSPF {
		t.Fatalf("publish spf beside another's = %q, %v; want a conflict naming it", act, err)
	}
	if act, err := step(t, c, nil, zone, dns.KindSPF); act != dns.Delete || err != nil {
		t.Fatalf("retire spf beside another's = %q, %v; want slipway's retired", act, err)
	}
	q := new(mdns.Msg)
	q.SetQuestion(zone+".", mdns.TypeTXT)
	r, _, err := (&mdns.Client{Net: "tcp"}).Exchange(q, devtest.Env(t).DNSServer)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, rr := range r.Answer {
		got = append(got, strings.Join(rr.(*mdns.TXT).Txt, ""))
	}
	slices.Sort(got)
	if want := []string{"site-verification=abc", "v=spf1 include:other.example -all"}; !slices.Equal(got, want) {
		t.Errorf("apex TXT after slipway's SPF retired = %q, want %q", got, want)
	}
	if owner := read(t, c, zone, dns.KindSPF).Owner; len(owner) != 0 {
		t.Errorf("the SPF's owner TXT is left: %q", owner)
	}
}
