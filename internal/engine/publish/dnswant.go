package publish

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"slipway.dev/slipway/internal/dns"
	"slipway.dev/slipway/internal/engine/lane"
	"slipway.dev/slipway/internal/spec"
	"slipway.dev/slipway/internal/state"
)

// dnsItem is one record set the DNS lane looks at: wanted (want set; Values nil while the
// address is unknown) or to retire (want nil), attributed to a node.
type dnsItem struct {
	node       string
	name       string
	kind       dns.Kind
	want       *dns.Set
	unknown    bool // the node's address is not known yet
	recordOnly bool // in the state only: retired if ours
	// zone is the publish.zone the set is (or was) published in; "" for a set the state
	// recorded before it recorded zones.
	zone string
}

// key names the set whatever its zone: a name is published once.
func (it dnsItem) key() state.DNSRecord { return state.DNSRecord{Name: it.name, Kind: string(it.kind)} }

// probe is the set as the server is asked about it, in the zone it is published in: the
// group's zone (current) when it is there (the client's own), else the zone the state
// recorded, else (a state written before zones were recorded) the name itself, whose
// server's zone the client finds.
func (it dnsItem) probe(current string) dns.Set {
	s := dns.Set{Name: it.name, Kind: it.kind}
	if it.want != nil {
		s = *it.want
	}
	switch {
	case it.zone != "" && !strings.EqualFold(it.zone, current):
		s.Zone = it.zone
	case it.zone == "" && !spec.InZone(it.name, current):
		s.Zone = it.name
	}
	return s
}

// wantedDNS are the record sets g wants (SPEC §7), per node in file order: each published
// name at the node's addresses (none while the group is suspended), and on the mail relay the
// zone's MX, SPF and _dmarc. addrs maps a node to its addresses; a node missing there has
// its names planned as known after apply.
func wantedDNS(g *spec.Group, suspended bool, addrs map[string][]string) []dnsItem {
	p := g.Publish
	if p == nil {
		return nil
	}
	var out []dnsItem
	for _, n := range g.Nodes {
		if !suspended {
			a, known := addrs[n.Name]
			for _, name := range n.PublishedNames {
				s := &dns.Set{Name: strings.ToLower(name), Kind: dns.KindAddress, Values: a, TTL: p.TTL, Node: n.Name}
				out = append(out, dnsItem{node: n.Name, name: s.Name, kind: s.Kind, want: s, unknown: !known || len(a) == 0, zone: zoneName(p.Zone)})
			}
		}
		if p.Mail != nil && p.Mail.Relay == n.Name && len(n.PublishedNames) > 0 {
			out = append(out, mailItems(p, n)...)
		}
	}
	return out
}

// mailItems are the zone's mail records on relay node n (FR-020).
func mailItems(p *spec.Publish, n *spec.Node) []dnsItem {
	zone := zoneName(p.Zone)
	sets := []dns.Set{
		{Name: zone, Kind: dns.KindMX, Values: []string{"10 " + strings.ToLower(n.PublishedNames[0])}},
		{Name: zone, Kind: dns.KindSPF, Values: []string{p.Mail.SPF}},
	}
	if p.Mail.DMARC != "" {
		sets = append(sets, dns.Set{Name: "_dmarc." + zone, Kind: dns.KindDMARC, Values: []string{p.Mail.DMARC}})
	}
	out := make([]dnsItem, len(sets))
	for i := range sets {
		s := &sets[i]
		s.TTL, s.Node = p.TTL, n.Name
		out[i] = dnsItem{node: n.Name, name: s.Name, kind: s.Kind, want: s, zone: zone}
	}
	return out
}

// zoneName is publish.zone as the state records it: lower case, no trailing dot.
func zoneName(zone string) string { return strings.TrimSuffix(strings.ToLower(zone), ".") }

// recordedDNS are the sets the state says were published and wanted does not hold: to
// retire (when they are still ours), attributed to the node the state has them on.
func recordedDNS(doc *state.Document, wanted []dnsItem) []dnsItem {
	if doc == nil {
		return nil
	}
	have := map[state.DNSRecord]bool{}
	for _, w := range wanted {
		have[w.key()] = true
	}
	var out []dnsItem
	for _, node := range slices.Sorted(maps.Keys(doc.Nodes)) {
		for _, r := range doc.Nodes[node].DNS {
			if k := (state.DNSRecord{Name: r.Name, Kind: r.Kind}); !have[k] {
				have[k] = true
				out = append(out, dnsItem{node: node, name: r.Name, kind: dns.Kind(r.Kind), recordOnly: true, zone: r.Zone})
			}
		}
	}
	return out
}

// dnsServerFor is the DNS server of t's group: the engine's, else a client made once from its
// publish: with the secret read from the environment (never stored anywhere but the client).
func (l *Lane) dnsServerFor(t lane.Target) (Server, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.given != nil {
		return l.given, nil
	}
	if l.dns != nil {
		return l.dns, nil
	}
	p := t.Group.Publish
	secret, err := p.DNS.Secret()
	if err != nil {
		return nil, fmt.Errorf("group %s: publish: dns: %w", t.Group.Name, err)
	}
	c, err := dns.New(dns.Config{Server: p.DNS.Server, Zone: p.Zone, Key: p.DNS.Key, Algorithm: p.DNS.Algorithm}, secret)
	if err != nil {
		return nil, fmt.Errorf("group %s: publish: %w", t.Group.Name, err)
	}
	l.dns = c
	return c, nil
}

// dnsOwner is the owner the group's records carry: <group>/<namespace>@<UID of kube-system>.
func (l *Lane) dnsOwner(ctx context.Context, t lane.Target) (string, error) {
	ks, err := l.kube.Namespace(ctx, "kube-system")
	if err != nil {
		return "", err
	}
	if ks == nil || ks.GetUID() == "" {
		return "", fmt.Errorf("group %s: publish: namespace kube-system not found: its UID names the cluster in the owner of the records", t.Group.Name)
	}
	return dns.Owner(t.Group.Name, t.Namespace, string(ks.GetUID())), nil
}

// nodeAddress is the address node's names point at: the Gateway's for a node behind it, else
// its LoadBalancer Service's ingress.
func (l *Lane) nodeAddress(ctx context.Context, t lane.Target, node string) ([]string, error) {
	if n := t.Group.Node(node); n != nil && t.Group.AddressModeOf(n) == spec.BehindGateway {
		ref := t.Group.Publish.Gateway
		gw, _, err := l.kube.Gateway(ctx, ref.Namespace, ref.Name)
		return gatewayAddresses(gw), err
	}
	return l.kube.ServiceIngress(ctx, t.Namespace, node)
}

// readDNS opens the group's DNS server and reads what it holds at items' names, with the owner
// this group's records carry: what both plan and apply start from.
func (l *Lane) readDNS(ctx context.Context, t lane.Target, items []dnsItem) (Server, string, []dns.Seen, error) {
	srv, err := l.dnsServerFor(t)
	if err != nil {
		return nil, "", nil, err
	}
	owner, err := l.dnsOwner(ctx, t)
	if err != nil {
		return nil, "", nil, err
	}
	seen, err := srv.Read(ctx, probes(items, t.Group.Publish.Zone))
	if err != nil {
		return nil, "", nil, err
	}
	return srv, owner, seen, nil
}
