package publish

import (
	"context"
	"fmt"
	"strings"

	"slipway.dev/slipway/internal/dns"
	"slipway.dev/slipway/internal/engine/lane"
	"slipway.dev/slipway/internal/state"
	"slipway.dev/slipway/internal/status"
)

// statusDNS says for each node of gs that publishes something whether the DNS server agrees
// (SPEC §7), from the addresses Addresses found: "agrees", or what differs. It only
// queries. A server it cannot read makes every such node "cannot tell: …".
func (l *Lane) statusDNS(ctx context.Context, t lane.Target, doc *state.Document, gs *status.Group) {
	verdict := l.nodesDNS(ctx, t, doc, gs)
	for i, n := range gs.Nodes {
		gs.Nodes[i].DNS = verdict[n.Node]
	}
}

// nodesDNS is statusDNS's verdict per node.
func (l *Lane) nodesDNS(ctx context.Context, t lane.Target, doc *state.Document, gs *status.Group) map[string]string {
	if t.Group.Publish == nil {
		return nil
	}
	addrs := map[string][]string{}
	for _, n := range gs.Nodes {
		if len(n.Address) > 0 {
			addrs[n.Node] = n.Address
		}
	}
	suspended := gs.Suspended
	items := wantedDNS(t.Group, suspended, addrs)
	if suspended {
		// The names are retired while suspended: agreeing is having none of them.
		for _, it := range wantedDNS(t.Group, false, nil) {
			if it.kind == dns.KindAddress {
				items = append(items, dnsItem{node: it.node, name: it.name, kind: it.kind})
			}
		}
	}
	out := map[string]string{}
	for _, it := range items {
		out[it.node] = "agrees"
	}
	if len(items) == 0 {
		return nil
	}
	fail := func(err error) map[string]string {
		for n := range out {
			out[n] = "cannot tell: " + err.Error()
		}
		return out
	}
	srv, err := l.dnsServerFor(t)
	if err != nil {
		return fail(err)
	}
	owner, err := l.dnsOwner(ctx, t)
	if err != nil {
		return fail(err)
	}
	seen, err := srv.Read(ctx, probes(items, t.Group.Publish.Zone))
	if err != nil {
		return fail(err)
	}
	// Records still owned under an earlier release's key that the deployment adopts (or
	// adopted: an apply stopped before it rewrote their owner) are the deployment's.
	diffs := map[string][]string{}
	for i, it := range items {
		if d := dnsDiff(it, seen[i], owner, dnsAdopts(t, doc, it, owner)); d != "" {
			diffs[it.node] = append(diffs[it.node], d)
		}
	}
	for n, d := range diffs {
		out[n] = "differs: " + strings.Join(d, "; ")
	}
	return out
}

// dnsDiff is how the server differs from item, "" when it agrees.
func dnsDiff(it dnsItem, seen dns.Seen, owner, adopts string) string {
	act, ce := dns.Decide(it.want, it.name, it.kind, seen, owner, adopts)
	switch {
	case act == dns.Conflict:
		return ce.Error()
	case it.unknown:
		return it.name + ": the node has no address yet"
	}
	switch act {
	case dns.None:
		return ""
	case dns.Adopt:
		// Owned under the earlier release's key, which the next apply rewrites: the records
		// agree when they are the ones wanted.
		if it.want.Holds(seen) {
			return ""
		}
	case dns.Create:
		return it.name + " is not published"
	case dns.Delete:
		return it.name + " is still published (" + strings.Join(recordTexts(seen.Records), ", ") + ")"
	}
	return fmt.Sprintf("%s holds %s, not %s", it.name, orNone(recordTexts(seen.Records)), strings.Join(recordTexts(it.want.Records()), ", "))
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "nothing"
	}
	return strings.Join(s, ", ")
}
