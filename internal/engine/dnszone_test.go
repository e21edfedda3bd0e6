package engine

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"slipway.dev/slipway/internal/dns"
	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/state"
)

// publishedMail is the state and the server after node mail's name mail.example.org was
// published in zone example.org (zone: "" is a state written before zones were recorded).
func publishedMail(d *fakeDNS, zone string) *memStore {
	set := dns.Set{Name: "mail.example.org", Kind: dns.KindAddress, Values: []string{"192.0.2.7"}, TTL: 300, Node: "mail"}
	d.Put(set.Name, set.Kind, dns.Seen{Owner: []string{set.OwnerTextOf(dns.Owner("demo", "demo", "uid-ks"))}, Records: set.Records()})
	return &memStore{Doc: &state.Document{Group: "demo", Nodes: map[string]*state.NodeState{"mail": {
		DNS: []state.DNSRecord{{Name: set.Name, Kind: "address", Zone: zone}}}}}}
}

// A changed publish.zone: the name published in the old zone is retired there (the zone the
// state recorded, or for an older state the zone that holds the name), the new name is
// published in the new one, and the state records each with its zone (issue 35 item 16).
func TestZoneChangeRetiresInOldZone(t *testing.T) {
	for _, recorded := range []string{"example.org", ""} {
		t.Run(fmt.Sprintf("recorded zone %q", recorded), func(t *testing.T) {
			ctx := context.Background()
			f, d := publishedFake(t)
			d.Zone = "example.net" // the client is the new zone's
			store := publishedMail(d, recorded)
			g := mailGroup()
			g.Publish.Zone = "example.net"
			g.Nodes[0].PublishedNames = []string{"mail.example.net"}
			tgt := Target{Group: g, Namespace: "demo", Store: store}
			e := New(Options{Kube: f, DNS: d, Timeout: time.Second, Parallelism: 2})
			p := &plan.Plan{Group: "demo", Namespace: "demo", Addresses: map[string][]string{"mail": {"192.0.2.7"}}}
			if err := publishLane(e).PlanDNS(ctx, tgt.lent(), store.Doc, p); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, rc := range p.Node("mail").Records {
				got = append(got, string(rc.Action)+" "+rc.Name)
			}
			if diff := cmp.Diff([]string{"create mail.example.net", "delete mail.example.org"}, got); diff != "" {
				t.Fatalf("plan (-want +got):\n%s", diff)
			}
			p.Steps = plan.BuildSteps(p, g, e.rolloutLimit)
			if err := e.Apply(ctx, p, tgt); err != nil {
				t.Fatalf("apply: %v", err)
			}
			if diff := cmp.Diff([]string{"delete mail.example.org", "create mail.example.net"}, d.Updates()); diff != "" {
				t.Errorf("UPDATEs (-want +got):\n%s", diff)
			}
			want := []state.DNSRecord{{Name: "mail.example.net", Kind: "address", Zone: "example.net"}}
			if diff := cmp.Diff(want, store.Doc.Nodes["mail"].DNS); diff != "" {
				t.Errorf("state's dns (-want +got):\n%s", diff)
			}
		})
	}
}

// Without publish: in the file, a state that lists published records refuses plan, apply
// and destroy, naming the records: nothing would retire them (issue 35 item 16).
func TestPublishRemovedRefused(t *testing.T) {
	ctx := context.Background()
	f, d := publishedFake(t)
	store := publishedMail(d, "example.org")
	g := mailGroup()
	g.Publish = nil
	tgt := Target{Group: g, Namespace: "demo", Store: store}
	e := New(Options{Kube: f, DNS: d, Timeout: time.Second, Parallelism: 2})
	p := &plan.Plan{Group: "demo", Namespace: "demo"}
	err := publishLane(e).PlanDNS(ctx, tgt.lent(), store.Doc, p)
	if err == nil || !strings.Contains(err.Error(), "mail.example.org") || !strings.Contains(err.Error(), "put publish: back") {
		t.Errorf("plan without publish: = %v, want a refusal naming mail.example.org", err)
	}
	if _, err := e.Scope(ctx, tgt, DestroyOptions{}); err == nil || !strings.Contains(err.Error(), "mail.example.org") {
		t.Errorf("destroy without publish: = %v, want a refusal naming mail.example.org", err)
	}
	if got := d.Records("mail.example.org", dns.KindAddress); len(got) != 1 {
		t.Errorf("the record was touched: %v", got)
	}
	store.Doc.Nodes["mail"].DNS = nil // once retired: nothing to refuse
	if err := publishLane(e).PlanDNS(ctx, tgt.lent(), store.Doc, p); err != nil {
		t.Errorf("plan without publish: and no records = %v", err)
	}
}
