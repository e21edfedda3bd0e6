package dns_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"slipway.dev/slipway/internal/devcluster"
	"slipway.dev/slipway/internal/dns"
)

// A wildcard answers queries for names that do not exist: a read by queries leaves those
// answers out, as a zone transfer (and an UPDATE's prerequisites) do, so that a new name
// under a wildcard is free by both paths, while records that exist at a name, the wildcard
// itself included, stay a conflict by both (issue 35 item 9).
func TestWildcardIsNoConflict(t *testing.T) {
	c, zone, secret := knot(t)
	ctx := context.Background()
	foreign(t, c, secret,
		"*."+zone+". 60 IN A 198.51.100.9",
		"*."+zone+`. 60 IN TXT "v=spf1 -all"`, // answers _slipway.<name> and _dmarc.<zone> too
		"taken."+zone+". 60 IN A 198.51.100.7",
		"sub."+zone+". 60 IN A 198.51.100.9", // the wildcard's own records, at a name that exists
		"*.sub."+zone+". 60 IN A 198.51.100.8",
	)
	free, taken := dns.Seen{}, func(v string) dns.Seen { return dns.Seen{Records: []dns.Record{{Type: "A", Value: v, TTL: 60}}} }
	cases := []struct {
		set  dns.Set
		want dns.Seen
	}{
		{dns.Set{Name: "new." + zone, Kind: dns.KindAddress}, free},
		{dns.Set{Name: "a.b." + zone, Kind: dns.KindAddress}, free},
		{dns.Set{Name: "_dmarc." + zone, Kind: dns.KindDMARC}, free},
		{dns.Set{Name: "taken." + zone, Kind: dns.KindAddress}, taken("198.51.100.7")},
		{dns.Set{Name: "*." + zone, Kind: dns.KindAddress}, taken("198.51.100.9")},
		{dns.Set{Name: "sub." + zone, Kind: dns.KindAddress}, taken("198.51.100.9")},
		{dns.Set{Name: "x.sub." + zone, Kind: dns.KindAddress}, free},
	}
	sets := make([]dns.Set, len(cases))
	want := make([]dns.Seen, len(cases))
	for i, tc := range cases {
		sets[i], want[i] = tc.set, tc.want
	}
	// Enough sets to ask for a transfer: slipway's key may, the other key holder's may not.
	for i := len(sets); i < 16; i++ {
		sets = append(sets, dns.Set{Name: fmt.Sprintf("pad%d.%s", i, zone), Kind: dns.KindAddress})
		want = append(want, free)
	}
	for _, key := range []string{devcluster.TSIGKey, devcluster.OtherTSIGKey} {
		t.Run(key, func(t *testing.T) {
			rc, _ := readVia(t, zone, key)
			got, err := rc.Read(ctx, sets)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("read (-want +got):\n%s", diff)
			}
			for i := range cases { // and a few sets, which are always queried
				got, err := rc.Read(ctx, sets[i:i+1])
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(want[i], got[0]); diff != "" {
					t.Errorf("query %s (-want +got):\n%s", sets[i].Name, diff)
				}
			}
		})
	}
	// The free name is published, and read back as ours, by queries.
	name := "new." + zone
	set := &dns.Set{Name: name, Kind: dns.KindAddress, Values: []string{"192.0.2.1"}, TTL: 300, Node: "web"}
	if act, err := step(t, c, set, name, dns.KindAddress); act != dns.Create || err != nil {
		t.Fatalf("publish under a wildcard = %q, %v; want create", act, err)
	}
	if act, err := step(t, c, set, name, dns.KindAddress); act != dns.None || err != nil {
		t.Fatalf("publish again = %q, %v; want nothing", act, err)
	}
	var ce *dns.ConflictError
	other := &dns.Set{Name: "taken." + zone, Kind: dns.KindAddress, Values: []string{"192.0.2.1"}, TTL: 300, Node: "web"}
	if act, err := step(t, c, other, other.Name, dns.KindAddress); act != dns.Conflict || !errors.As(err, &ce) {
		t.Fatalf("publish over a record = %q, %v; want a conflict", act, err)
	}
}
