package dns_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	mdns "github.com/miekg/dns"

	"slipway.dev/slipway/internal/devcluster"
	"slipway.dev/slipway/internal/devcluster/devtest"
	"slipway.dev/slipway/internal/dns"
)

const owner = "g/ns@uid-1"

// knot is a Client of the dev environment's Knot for a domain of the test's own under dev.test,
// and the secret it signs with.
func knot(t *testing.T) (*dns.Client, string, string) {
	t.Helper()
	env := devtest.Env(t)
	b, err := os.ReadFile(env.TSIGSecretFile)
	if err != nil {
		t.Fatal(err)
	}
	secret := strings.TrimSpace(string(b))
	r := make([]byte, 4)
	_, _ = rand.Read(r)
	zone := "t" + hex.EncodeToString(r) + "." + devcluster.DNSZone
	c, err := dns.New(dns.Config{Server: env.DNSServer, Zone: zone, Key: devcluster.TSIGKey}, secret)
	if err != nil {
		t.Fatal(err)
	}
	return c, zone, secret
}

// step reads set, decides and applies; it returns the action taken.
func step(t *testing.T, c *dns.Client, want *dns.Set, name string, kind dns.Kind) (dns.Action, error) {
	t.Helper()
	ctx := context.Background()
	probe := dns.Set{Name: name, Kind: kind}
	seen, err := c.Read(ctx, []dns.Set{probe})
	if err != nil {
		t.Fatal(err)
	}
	act, ce := dns.Decide(want, name, kind, seen[0], owner)
	if ce != nil {
		return act, ce
	}
	set := probe
	if want != nil {
		set = *want
	}
	return act, c.Apply(ctx, dns.Change{Action: act, Set: set, Seen: seen[0], Owner: owner})
}

func read(t *testing.T, c *dns.Client, name string, kind dns.Kind) dns.Seen {
	t.Helper()
	seen, err := c.Read(context.Background(), []dns.Set{{Name: name, Kind: kind}})
	if err != nil {
		t.Fatal(err)
	}
	return seen[0]
}

// foreign sends an UPDATE as another key holder would: records at name, no owner TXT.
func foreign(t *testing.T, c *dns.Client, secret string, rrs ...string) {
	t.Helper()
	m := new(mdns.Msg)
	m.SetUpdate(devcluster.DNSZone + ".")
	for _, s := range rrs {
		rr, err := mdns.NewRR(s)
		if err != nil {
			t.Fatal(err)
		}
		m.Insert([]mdns.RR{rr})
	}
	key := devcluster.TSIGKey + "."
	m.SetTsig(key, mdns.HmacSHA256, 300, time.Now().Unix())
	env := devtest.Env(t)
	r, _, err := (&mdns.Client{Net: "tcp", TsigSecret: map[string]string{key: secret}}).Exchange(m, env.DNSServer)
	if err != nil || r.Rcode != mdns.RcodeSuccess {
		t.Fatalf("foreign update: %v %v", r, err)
	}
}

// A published name goes through its life: created with its owner TXT, left alone when
// equal, changed from an address to a host name, and retired; each step is one UPDATE.
func TestPublishChangeRetire(t *testing.T) {
	c, zone, _ := knot(t)
	name := "web." + zone
	ownerText := []string{dns.OwnerText(owner, "web")}
	for i, s := range []struct {
		want   *dns.Set
		action dns.Action
		seen   dns.Seen
	}{
		{&dns.Set{Name: name, Kind: dns.KindAddress, Values: []string{"192.0.2.1", "2001:db8::1"}, TTL: 300, Node: "web"}, dns.Create,
			dns.Seen{Owner: ownerText, Records: []dns.Record{{Type: "A", Value: "192.0.2.1", TTL: 300}, {Type: "AAAA", Value: "2001:db8::1", TTL: 300}}}},
		{&dns.Set{Name: name, Kind: dns.KindAddress, Values: []string{"192.0.2.1", "2001:db8::1"}, TTL: 300, Node: "web"}, dns.None,
			dns.Seen{Owner: ownerText, Records: []dns.Record{{Type: "A", Value: "192.0.2.1", TTL: 300}, {Type: "AAAA", Value: "2001:db8::1", TTL: 300}}}},
		{&dns.Set{Name: name, Kind: dns.KindAddress, Values: []string{"lb.example.net"}, TTL: 60, Node: "web"}, dns.Update,
			dns.Seen{Owner: ownerText, Records: []dns.Record{{Type: "CNAME", Value: "lb.example.net", TTL: 60}}}},
		{nil, dns.Delete, dns.Seen{}},
		{nil, dns.None, dns.Seen{}},
	} {
		before := c.Updates()
		act, err := step(t, c, s.want, name, dns.KindAddress)
		if err != nil || act != s.action {
			t.Fatalf("step %d = %q, %v; want %q", i, act, err, s.action)
		}
		if sent, want := c.Updates()-before, map[bool]int{true: 0, false: 1}[act == dns.None]; sent != want {
			t.Errorf("step %d (%s) sent %d UPDATEs, want %d", i, act, sent, want)
		}
		if diff := cmp.Diff(s.seen, read(t, c, name, dns.KindAddress)); diff != "" {
			t.Errorf("step %d (%s): server holds (-want +got):\n%s", i, act, diff)
		}
	}
}

// Records another key holder made are a conflict: never overwritten, never retired; a create
// planned before they came is refused by its prerequisite, the records untouched.
func TestForeignRecordsAreNotTouched(t *testing.T) {
	c, zone, secret := knot(t)
	ctx := context.Background()
	name := "mine." + zone
	want := &dns.Set{Name: name, Kind: dns.KindAddress, Values: []string{"192.0.2.5"}, TTL: 300, Node: "mine"}
	probe := []dns.Set{{Name: name, Kind: dns.KindAddress}}
	seen, err := c.Read(ctx, probe) // read while the name is free…
	if err != nil {
		t.Fatal(err)
	}
	foreign(t, c, secret, name+". 60 IN A 198.51.100.7") // …then someone takes it
	err = c.Apply(ctx, dns.Change{Action: dns.Create, Set: *want, Seen: seen[0], Owner: owner})
	var ce *dns.ConflictError
	if !errors.As(err, &ce) || !ce.Changed {
		t.Fatalf("create after a foreign record = %v, want a ConflictError (changed)", err)
	}
	foreignSeen := dns.Seen{Records: []dns.Record{{Type: "A", Value: "198.51.100.7", TTL: 60}}}
	if diff := cmp.Diff(foreignSeen, read(t, c, name, dns.KindAddress)); diff != "" {
		t.Fatalf("foreign record touched (-want +got):\n%s", diff)
	}
	act, err := step(t, c, want, name, dns.KindAddress)
	if act != dns.Conflict || !errors.As(err, &ce) || ce.Name != name || len(ce.Records) != 1 {
		t.Fatalf("publish over a foreign record = %q, %v; want a conflict naming it", act, err)
	}
	if act, err := step(t, c, nil, name, dns.KindAddress); act != dns.None || err != nil {
		t.Fatalf("retire of a foreign name = %q, %v; want nothing", act, err)
	}
	// Another cluster's owner TXT: the same.
	other := "other." + zone
	foreign(t, c, secret, other+". 60 IN A 198.51.100.8", fmt.Sprintf(`_slipway.%s. 60 IN TXT "%s"`, other, dns.OwnerText("g/ns@uid-2", "x")))
	if act, err := step(t, c, &dns.Set{Name: other, Kind: dns.KindAddress, Values: []string{"192.0.2.6"}, TTL: 300}, other, dns.KindAddress); act != dns.Conflict || err == nil {
		t.Fatalf("publish over another cluster's name = %q, %v; want a conflict", act, err)
	}
}

// An update planned from an owner TXT that changed since (another run took the name) is
// refused by its prerequisite.
func TestUpdateRefusedWhenOwnerChanged(t *testing.T) {
	c, zone, secret := knot(t)
	ctx := context.Background()
	name := "moved." + zone
	want := &dns.Set{Name: name, Kind: dns.KindAddress, Values: []string{"192.0.2.1"}, TTL: 300, Node: "a"}
	if _, err := step(t, c, want, name, dns.KindAddress); err != nil {
		t.Fatal(err)
	}
	seen := read(t, c, name, dns.KindAddress)
	m := new(mdns.Msg) // someone replaces the owner TXT
	m.SetUpdate(devcluster.DNSZone + ".")
	rr, _ := mdns.NewRR(fmt.Sprintf(`_slipway.%s. 60 IN TXT "someone"`, name))
	m.RemoveRRset([]mdns.RR{rr})
	m.Insert([]mdns.RR{rr})
	key := devcluster.TSIGKey + "."
	m.SetTsig(key, mdns.HmacSHA256, 300, time.Now().Unix())
	if r, _, err := (&mdns.Client{Net: "tcp", TsigSecret: map[string]string{key: secret}}).Exchange(m, devtest.Env(t).DNSServer); err != nil || r.Rcode != mdns.RcodeSuccess {
		t.Fatal(r, err)
	}
	for _, act := range []dns.Action{dns.Update, dns.Delete} {
		err := c.Apply(ctx, dns.Change{Action: act, Set: dns.Set{Name: name, Kind: dns.KindAddress, Values: []string{"192.0.2.2"}, TTL: 300}, Seen: seen, Owner: owner})
		var ce *dns.ConflictError
		if !errors.As(err, &ce) || !ce.Changed {
			t.Errorf("%s after the owner changed = %v, want a ConflictError (changed)", act, err)
		}
	}
	if got := read(t, c, name, dns.KindAddress); len(got.Records) != 1 || got.Records[0].Value != "192.0.2.1" {
		t.Errorf("records after refused updates = %v, want A 192.0.2.1 untouched", got)
	}
}

// Mail records: MX, SPF beside another TXT at the apex (kept when the SPF is retired), _dmarc.
func TestMailRecords(t *testing.T) {
	c, zone, secret := knot(t)
	foreign(t, c, secret, zone+`. 60 IN TXT "site-verification=abc"`)
	sets := []dns.Set{
		{Name: zone, Kind: dns.KindMX, Values: []string{"10 mx." + zone}, TTL: 300, Node: "mx"},
		{Name: zone, Kind: dns.KindSPF, Values: []string{"v=spf1 mx -all"}, TTL: 300, Node: "mx"},
		{Name: "_dmarc." + zone, Kind: dns.KindDMARC, Values: []string{"v=DMARC1; p=none"}, TTL: 300, Node: "mx"},
	}
	for _, s := range sets {
		if act, err := step(t, c, &s, s.Name, s.Kind); act != dns.Create || err != nil {
			t.Fatalf("publish %s = %q, %v", s.Kind, act, err)
		}
		if act, err := step(t, c, &s, s.Name, s.Kind); act != dns.None || err != nil {
			t.Fatalf("publish %s again = %q, %v; want nothing", s.Kind, act, err)
		}
	}
	if act, err := step(t, c, nil, zone, dns.KindSPF); act != dns.Delete || err != nil {
		t.Fatalf("retire spf = %q, %v", act, err)
	}
	q := new(mdns.Msg)
	q.SetQuestion(zone+".", mdns.TypeTXT)
	r, _, err := (&mdns.Client{Net: "tcp"}).Exchange(q, devtest.Env(t).DNSServer)
	if err != nil || len(r.Answer) != 1 || !strings.Contains(r.Answer[0].String(), "site-verification=abc") {
		t.Fatalf("apex TXT after the SPF retired = %v, %v; want only the site verification", r, err)
	}
}

// The secret is in no error and no printed form of the client.
func TestSecretNowhere(t *testing.T) {
	c, zone, secret := knot(t)
	bad, err := dns.New(dns.Config{Server: "127.0.0.1:1", Zone: zone, Key: devcluster.TSIGKey, Timeout: time.Second}, secret)
	if err != nil {
		t.Fatal(err)
	}
	wrongKey, _ := dns.New(dns.Config{Server: devtest.Env(t).DNSServer, Zone: zone, Key: "nobody", Timeout: time.Second}, secret)
	set := dns.Set{Name: "s." + zone, Kind: dns.KindAddress, Values: []string{"192.0.2.1"}, TTL: 300}
	var texts []string
	for _, cl := range []*dns.Client{bad, wrongKey} {
		err := cl.Apply(context.Background(), dns.Change{Action: dns.Create, Set: set, Owner: owner})
		if err == nil {
			t.Fatalf("%v: update succeeded", cl)
		}
		texts = append(texts, err.Error(), fmt.Sprintf("%v %+v %#v", cl, cl, cl))
	}
	texts = append(texts, fmt.Sprintf("%v %+v %#v", c, c, c))
	for _, s := range texts {
		if strings.Contains(s, secret) {
			t.Errorf("the TSIG secret is in %q", s)
		}
	}
}
