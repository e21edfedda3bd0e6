package dns_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"slipway.dev/slipway/internal/devcluster/devtest"
	"slipway.dev/slipway/internal/dns"
)

// A set published in one zone is read and retired by a client of another (publish.zone
// changed) when the set says its zone: the UPDATE names the server's zone that holds it
// (issue 35 item 16). Enough sets to read by transfer, and a few, read by queries.
func TestSetOfAnotherZone(t *testing.T) {
	server, secret := devtest.Knot(t, "old.test", "new.test")
	ctx := context.Background()
	client := func(zone string) *dns.Client {
		c, err := dns.New(dns.Config{Server: server, Zone: zone, Key: devtest.KnotKey}, secret)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	oldC, newC := client("old.test"), client("new.test")
	old := dns.Set{Name: "www.old.test", Kind: dns.KindAddress, Values: []string{"192.0.2.1"}, TTL: 300, Node: "web"}
	if err := oldC.Apply(ctx, dns.Change{Action: dns.Create, Set: old, Owner: owner}); err != nil {
		t.Fatal(err)
	}
	want := dns.Seen{Owner: []string{old.OwnerTextOf(owner)}, Records: old.Records()}
	probe := dns.Set{Name: old.Name, Kind: old.Kind, Zone: "old.test"}
	for _, n := range []int{1, 20} {
		sets := []dns.Set{probe}
		for i := 1; i < n; i++ {
			sets = append(sets, dns.Set{Name: fmt.Sprintf("n%d.new.test", i), Kind: dns.KindAddress})
		}
		seen, err := newC.Read(ctx, sets)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, seen[0]); diff != "" {
			t.Errorf("read of %d sets, from the new zone's client (-want +got):\n%s", n, diff)
		}
	}
	// Without its zone the UPDATE names the new zone, which the server refuses (NOTZONE).
	if err := newC.Apply(ctx, dns.Change{Action: dns.Delete, Set: dns.Set{Name: old.Name, Kind: old.Kind}, Seen: want, Owner: owner}); err == nil {
		t.Fatal("a retire in the wrong zone succeeded")
	}
	if err := newC.Apply(ctx, dns.Change{Action: dns.Delete, Set: probe, Seen: want, Owner: owner}); err != nil {
		t.Fatalf("retire in the zone it was published in: %v", err)
	}
	seen, err := oldC.Read(ctx, []dns.Set{probe})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(dns.Seen{}, seen[0]); diff != "" {
		t.Errorf("after the retire (-want +got):\n%s", diff)
	}
}
