package dns_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"slipway.dev/slipway/internal/dns"
)

// Records an earlier release published under the deployment's old key (issue 46) are adopted
// on the dev environment's Knot: Decide, told the old owner, says Adopt; the UPDATE rewrites
// only the owner TXT (the records stay); an owner TXT someone else wrote meanwhile fails the
// prerequisite and is left; any other owner stays a conflict; a retired set of the old owner
// is deleted.
func TestAdoptEarlierOwner(t *testing.T) {
	c, zone, secret := knot(t)
	ctx := context.Background()
	const old = "g-front/ns@uid-1"
	oldText := func(name, node string) string {
		return fmt.Sprintf(`_slipway.%s. 300 IN TXT "%s"`, name, dns.OwnerText(old, node))
	}
	name := "front." + zone
	foreign(t, c, secret, name+". 300 IN A 192.0.2.1", oldText(name, "web"))
	want := &dns.Set{Name: name, Kind: dns.KindAddress, Values: []string{"192.0.2.1"}, TTL: 300, Node: "web"}
	seen := read(t, c, name, dns.KindAddress)
	if act, ce := dns.Decide(want, name, dns.KindAddress, seen, owner); act != dns.Conflict || ce == nil {
		t.Fatalf("Decide without the old owner = %q, %v; want a conflict", act, ce)
	}
	if act, ce := dns.Decide(want, name, dns.KindAddress, seen, owner, "g-back/ns@uid-1"); act != dns.Conflict || ce == nil {
		t.Fatalf("Decide adopting another owner = %q, %v; want a conflict", act, ce)
	}
	act, ce := dns.Decide(want, name, dns.KindAddress, seen, owner, old)
	if act != dns.Adopt || ce != nil || dns.AdoptedOwner(seen) != old {
		t.Fatalf("Decide adopting %s = %q, %v (owner %q); want adopt", old, act, ce, dns.AdoptedOwner(seen))
	}
	if err := c.Apply(ctx, dns.Change{Action: act, Set: *want, Seen: seen, Owner: owner}); err != nil {
		t.Fatal(err)
	}
	adopted := dns.Seen{Owner: []string{dns.OwnerText(owner, "web")}, Records: seen.Records}
	if d := cmp.Diff(adopted, read(t, c, name, dns.KindAddress)); d != "" {
		t.Errorf("after the adoption (-want +got):\n%s", d)
	}
	if act, err := step(t, c, want, name, dns.KindAddress); act != dns.None || err != nil {
		t.Errorf("publish after the adoption = %q, %v; want nothing", act, err)
	}

	// Read under the old owner, then someone else takes the name: the adoption is refused.
	taken := "taken." + zone
	foreign(t, c, secret, taken+". 300 IN A 192.0.2.2", oldText(taken, "web"))
	seen = read(t, c, taken, dns.KindAddress)
	foreign(t, c, secret, fmt.Sprintf(`_slipway.%s. 300 IN TXT "%s"`, taken, dns.OwnerText("someone/else@uid-1", "x")))
	now := read(t, c, taken, dns.KindAddress) // the name holds the old owner's TXT and theirs
	set := dns.Set{Name: taken, Kind: dns.KindAddress, Values: []string{"192.0.2.2"}, TTL: 300, Node: "web"}
	err := c.Apply(ctx, dns.Change{Action: dns.Adopt, Set: set, Seen: seen, Owner: owner})
	if !errors.As(err, &ce) || !ce.Changed {
		t.Errorf("adopt after the owner TXT changed = %v; want a ConflictError (changed)", err)
	}
	if d := cmp.Diff(now, read(t, c, taken, dns.KindAddress)); d != "" {
		t.Errorf("a refused adoption changed the name (-want +got):\n%s", d)
	}
	if act, ce := dns.Decide(&set, taken, dns.KindAddress, now, owner, old); act != dns.Conflict || ce == nil {
		t.Errorf("Decide on two owner texts = %q, %v; want a conflict", act, ce)
	}

	// A set the old owner published that is no longer wanted is retired.
	gone := "gone." + zone
	foreign(t, c, secret, gone+". 300 IN A 192.0.2.3", oldText(gone, "web"))
	seen = read(t, c, gone, dns.KindAddress)
	if act, ce := dns.Decide(nil, gone, dns.KindAddress, seen, owner, old); act != dns.Delete || ce != nil {
		t.Fatalf("retire of the old owner's set = %q, %v; want delete", act, ce)
	}
	if err := c.Apply(ctx, dns.Change{Action: dns.Delete, Set: dns.Set{Name: gone, Kind: dns.KindAddress}, Seen: seen, Owner: owner}); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(dns.Seen{}, read(t, c, gone, dns.KindAddress)); d != "" {
		t.Errorf("after the retire (-want +got):\n%s", d)
	}
}
