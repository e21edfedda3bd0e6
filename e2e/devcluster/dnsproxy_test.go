package devcluster_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/miekg/dns"

	"slipway.dev/slipway/internal/devcluster"
	"slipway.dev/slipway/internal/devcluster/devtest"
)

// The DNS proxy forwards messages over TCP to the dev environment's Knot and records each:
// a query as a read, an UPDATE as a write.
func TestDNSProxyCountsUpdates(t *testing.T) {
	env := devtest.Env(t)
	p, err := devtest.DNSProxy(env.DNSServer)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	c := &dns.Client{Net: "tcp"}
	conn, err := c.Dial(p.Host())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	q := new(dns.Msg)
	q.SetQuestion(devcluster.DNSZone+".", dns.TypeSOA)
	for range 2 { // two messages on one connection
		if r, _, err := c.ExchangeWithConn(q, conn); err != nil || len(r.Answer) != 1 {
			t.Fatalf("SOA through the proxy = %v, %v", r, err)
		}
	}
	u := new(dns.Msg)
	u.SetUpdate(devcluster.DNSZone + ".")
	if _, _, err := c.ExchangeWithConn(u, conn); err != nil { // unsigned: refused, but counted
		t.Fatal(err)
	}
	want := []devtest.Request{
		{Method: "QUERY", Verb: "QUERY", Path: devcluster.DNSZone + "."},
		{Method: "QUERY", Verb: "QUERY", Path: devcluster.DNSZone + "."},
		{Method: "UPDATE", Verb: "UPDATE", Path: devcluster.DNSZone + "."},
	}
	if d := cmp.Diff(want, p.Requests()); d != "" {
		t.Errorf("requests (-want +got):\n%s", d)
	}
	if w := p.Writes(); len(w) != 1 || w[0].Method != "UPDATE" {
		t.Errorf("writes = %v, want the UPDATE alone", w)
	}
}
