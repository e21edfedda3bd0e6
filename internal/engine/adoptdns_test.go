package engine

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"slipway.dev/slipway/internal/dns"
	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/state"
)

// The DNS records of an adopted per-app target (issue 46, upgrade path): the earlier release
// published mail.example.org owned by its key demo-front; the plan says the set is adopted
// (owner demo-front → demo.front) and apply rewrites its owner (one adopt UPDATE, no delete
// and create), both before the state moved (the plan's t.adopt) and after (the state's
// AdoptedFrom). A set of the old key that the state does not list, and a set of any other
// key, stay conflicts. Stand-ins: the fake cluster and DNS server.
func TestAdoptDNSRecords(t *testing.T) {
	const old, ns = "demo-front", "demo-front"
	whole := mailGroup()
	whole.Nodes[0].App = "front"
	g, err := whole.ForTarget("front")
	if err != nil {
		t.Fatal(err)
	}
	oldOwner, newOwner := dns.Owner(old, ns, "uid-ks"), dns.Owner(g.Name, ns, "uid-ks")
	set := dns.Set{Name: "mail.example.org", Kind: dns.KindAddress, Values: []string{"192.0.2.7"}, TTL: 300, Node: "mail"}
	for _, c := range []struct {
		name     string
		owner    string // the owner TXT's
		listed   bool   // the state lists the set
		adopting bool   // the plan before the state moved (else the state was adopted)
		want     plan.Action
	}{
		{"plan before the adoption", oldOwner, true, true, plan.Update},
		{"state adopted", oldOwner, true, false, plan.Update},
		{"another key's", dns.Owner("demo-back", ns, "uid-ks"), true, false, plan.Conflict},
		{"the old key's in another namespace", dns.Owner(old, "elsewhere", "uid-ks"), true, false, plan.Conflict},
		{"the old key's, not in the state", oldOwner, false, false, plan.Conflict},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			f, d := publishedFake(t)
			seen := dns.Seen{Owner: []string{set.OwnerTextOf(c.owner)}, Records: set.Records()}
			d.Put(set.Name, set.Kind, seen)
			doc := &state.Document{Group: g.Name, Namespace: ns, AdoptedFrom: old, Nodes: map[string]*state.NodeState{"mail": {}}}
			if c.listed {
				doc.Nodes["mail"].DNS = []state.DNSRecord{{Name: set.Name, Kind: "address", Zone: "example.org"}}
			}
			tgt := Target{Group: g, Namespace: ns, Store: &memStore{Doc: doc}}
			if c.adopting {
				legacy := *doc
				legacy.Group, legacy.AdoptedFrom = old, ""
				tgt.adopt = &adoption{from: old, doc: &legacy}
				doc = tgt.adopt.adoptedDoc(g.Name)
			}
			e := New(Options{Kube: f, DNS: d, Timeout: time.Second, Parallelism: 2})
			p := &plan.Plan{Group: g.Name, Namespace: ns, Addresses: map[string][]string{"mail": {"192.0.2.7"}}}
			if err := publishLane(e).PlanDNS(ctx, tgt.lent(), doc, p); err != nil {
				t.Fatal(err)
			}
			rs := p.Node("mail").Records
			if len(rs) != 1 || rs[0].Action != c.want {
				t.Fatalf("plan: %+v; want one %s", rs, c.want)
			}
			if c.want == plan.Conflict {
				p.Steps = plan.BuildSteps(p, g, e.rolloutLimit)
				if err := e.Apply(ctx, p, Target{Group: g, Namespace: ns, Store: tgt.Store}); err == nil {
					t.Errorf("apply took a set owned by %s", c.owner)
				}
				if diff := cmp.Diff(seen, read(d, set)); diff != "" || len(d.Updates()) != 0 {
					t.Errorf("the set was touched (-want +got):\n%s\nUPDATEs %q", diff, d.Updates())
				}
				return
			}
			wantText := "dns mail.example.org: A 192.0.2.7 kept, adopted: owner " + oldOwner + " -> " + newOwner
			if rs[0].String() != wantText || rs[0].Adopted != oldOwner || rs[0].Owner != newOwner {
				t.Errorf("plan says %q (adopted %q, owner %q), want %q", rs[0], rs[0].Adopted, rs[0].Owner, wantText)
			}
			tgt.adopt = nil // apply moved the state first: its AdoptedFrom says it now
			tgt.Store.(*memStore).Doc.AdoptedFrom = old
			p.Steps = plan.BuildSteps(p, g, e.rolloutLimit)
			if err := e.Apply(ctx, p, tgt); err != nil {
				t.Fatalf("apply: %v", err)
			}
			if diff := cmp.Diff([]string{"adopt mail.example.org"}, d.Updates()); diff != "" {
				t.Errorf("UPDATEs (-want +got):\n%s", diff)
			}
			after := dns.Seen{Owner: []string{set.OwnerTextOf(newOwner)}, Records: set.Records()}
			if diff := cmp.Diff(after, read(d, set)); diff != "" {
				t.Errorf("server after apply (-want +got):\n%s", diff)
			}
			p = &plan.Plan{Group: g.Name, Namespace: ns, Addresses: p.Addresses}
			if err := publishLane(e).PlanDNS(ctx, tgt.lent(), tgt.Store.(*memStore).Doc, p); err != nil || p.Node("mail") != nil {
				t.Errorf("plan after apply: %v, %+v; want nothing to change", err, p.Node("mail"))
			}
		})
	}
}

// read is what d holds for set.
func read(d *fakeDNS, set dns.Set) dns.Seen {
	seen, _ := d.Read(context.Background(), []dns.Set{set})
	return seen[0]
}

// A run killed after the adoption deleted the old state, before it unlocked, leaves the old
// key's lock: the next run removes it when it is an adoption's and its process is gone; a lock
// whose process runs, or another operation's, stays. Stand-ins: the fake cluster; the states
// and locks are the real file backend.
func TestAdoptDropsStaleLock(t *testing.T) {
	ctx := context.Background()
	x := newLegacyFixture(t, nil)
	e := x.engine(x.f)
	if _, err := e.adopt(ctx, x.target()); err != nil {
		t.Fatal(err)
	}
	if d, _ := x.store.Read(ctx); d == nil || d.AdoptedFrom != x.oldKey {
		t.Fatalf("adopted state %+v: want adoptedFrom %s", d, x.oldKey)
	}
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		op    string
		pid   int
		stays bool
	}{
		{"another operation's", "apply", gone.Process.Pid, true},
		{"a running adoption's", "adopt as " + x.g.Name, os.Getpid(), true},
		{"a killed adoption's", "adopt as " + x.g.Name, gone.Process.Pid, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			info := state.NewInfo(c.op)
			info.PID = c.pid
			id, err := x.old.Lock(ctx, info)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := e.adopt(ctx, x.target()); err != nil {
				t.Fatalf("adopt: %v", err)
			}
			held, err := x.old.LockInfo(ctx)
			if err != nil || (held != nil) != c.stays {
				t.Errorf("lock after the run: %+v, %v; want it kept %t", held, err, c.stays)
			}
			if held != nil {
				_ = x.old.Unlock(ctx, id)
			}
		})
	}
}
