package dns_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"slipway.dev/slipway/internal/devcluster"
	"slipway.dev/slipway/internal/devcluster/devtest"
	"slipway.dev/slipway/internal/dns"
)

// readVia is a client of the test's zone that reaches Knot through a counting proxy, signing
// with key: slipway's key may transfer the zone, the other key holder's may not.
func readVia(t *testing.T, zone, key string) (*dns.Client, *devtest.Proxy) {
	t.Helper()
	env := devtest.Env(t)
	file := env.TSIGSecretFile
	if key == devcluster.OtherTSIGKey {
		file = env.OtherTSIGSecretFile()
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	p, err := devtest.DNSProxy(env.DNSServer)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	c, err := dns.New(dns.Config{Server: p.Host(), Zone: zone, Key: key}, strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	return c, p
}

// messages counts what a proxy saw since the last call: transfers and the other queries.
func messages(p *devtest.Proxy) (transfers, queries int) {
	for _, r := range p.Take() {
		switch {
		case r.Verb == "AXFR":
			transfers++
		case r.Method == "QUERY":
			queries++
		}
	}
	return transfers, queries
}

// Many sets are read in one zone transfer, signed with slipway's key; a server that refuses
// the transfer (Knot's ACL refuses the other key holder) is read with queries instead, to the
// same result, and is not asked to transfer again; a few sets are queried without a transfer.
func TestReadTransfersOrQueries(t *testing.T) {
	c, zone, secret := knot(t)
	ctx := context.Background()
	var sets []dns.Set
	for i := range 20 {
		s := dns.Set{Name: fmt.Sprintf("n%d.%s", i, zone), Kind: dns.KindAddress, Values: []string{fmt.Sprintf("192.0.2.%d", i+1)}, TTL: 300, Node: "n"}
		if i < 15 { // the rest are not published: read as nothing
			if err := c.Apply(ctx, dns.Change{Action: dns.Create, Set: s, Owner: owner}); err != nil {
				t.Fatal(err)
			}
		}
		sets = append(sets, s)
	}
	mail := dns.Set{Name: zone, Kind: dns.KindSPF, Values: []string{"v=spf1 mx -all"}, TTL: 300, Node: "mx"}
	if err := c.Apply(ctx, dns.Change{Action: dns.Create, Set: mail, Owner: owner}); err != nil {
		t.Fatal(err)
	}
	foreign(t, c, secret, "n15."+zone+". 60 IN CNAME elsewhere.example.", zone+`. 300 IN TXT "site-verification=abc"`)
	sets = append(sets, mail)
	want := make([]dns.Seen, len(sets))
	for i, s := range sets {
		switch {
		case i < 15 || s.Kind == dns.KindSPF:
			want[i] = dns.Seen{Owner: []string{s.OwnerTextOf(owner)}, Records: s.Records()}
		case i == 15:
			want[i] = dns.Seen{Records: []dns.Record{{Type: "CNAME", Value: "elsewhere.example", TTL: 60}}}
		}
	}
	for _, tt := range []struct {
		key                string
		sets               int
		transfers, queries int // on the first read; a transfer first asks for the zone cut's SOA
		again              int // transfers asked for on a second read
	}{
		{devcluster.TSIGKey, len(sets), 1, 1, 1},
		// Address sets: TXT, A, AAAA, CNAME; SPF: TXT, TXT; and n15's CNAME, without an owner
		// TXT, once more below it: a wildcard's answer would be the same there.
		{devcluster.OtherTSIGKey, len(sets), 1, 1 + 4*20 + 2 + 1, 0},
		{devcluster.TSIGKey, 3, 0, 4 * 3, 0},
	} {
		t.Run(fmt.Sprintf("%s, %d sets", tt.key, tt.sets), func(t *testing.T) {
			rc, p := readVia(t, zone, tt.key)
			got, err := rc.Read(ctx, sets[:tt.sets])
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want[:tt.sets], got); diff != "" {
				t.Errorf("read (-want +got):\n%s", diff)
			}
			if x, q := messages(p); x != tt.transfers || q != tt.queries {
				t.Errorf("read sent %d transfers and %d queries, want %d and %d", x, q, tt.transfers, tt.queries)
			}
			if _, err := rc.Read(ctx, sets[:tt.sets]); err != nil {
				t.Fatal(err)
			}
			if x, _ := messages(p); x != tt.again {
				t.Errorf("a second read asked for %d transfers, want %d", x, tt.again)
			}
		})
	}
}
