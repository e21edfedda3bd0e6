package publish

import (
	"context"
	corev1 "k8s.io/api/core/v1"
	"slices"

	"slipway.dev/slipway/internal/dns"
	"slipway.dev/slipway/internal/engine/lane"
	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/spec"
	"slipway.dev/slipway/internal/state"
)

// PlanDNS adds to p, per node, the record sets apply publishes, changes or retires and the
// conflicts that refuse a node (SPEC §7). It reads the server with queries only: the sets the
// file wants, and those the state says were published (a name removed from the file).
func (l *Lane) PlanDNS(ctx context.Context, t lane.Target, doc *state.Document, p *plan.Plan) error {
	if t.Group.Publish == nil {
		return refuseLeftRecords(t, doc) // no server to read
	}
	// The address lane's (publishPlan): the Gateway's for a node behind it, else the
	// node's load-balancer ingress.
	addrs := map[string][]string{}
	ix := p.Index()
	for node, a := range p.Addresses {
		svc := ix.Change(plan.Key{Kind: "Service", Namespace: t.Namespace, Name: node})
		if n := t.Group.Node(node); svc != nil && svc.Action == plan.Replace && n != nil && t.Group.AddressModeOf(n) == spec.OwnAddress {
			continue // a Service made again gets an address of its own: known after apply
		}
		if len(a) > 0 {
			addrs[node] = a
		}
	}
	items := append(wantedDNS(t.Group, p.Suspended, addrs), recordedDNS(doc, nil)...)
	items = dedupeItems(items)
	if len(items) == 0 {
		return nil
	}
	_, owner, seen, err := l.readDNS(ctx, t, items)
	if err != nil {
		return err
	}
	for i, it := range items {
		if rc, ok := recordChange(it, seen[i], owner, dnsAdopts(t, doc, it, owner)); ok {
			addRecord(p, t.Group, it.node, rc)
		}
	}
	return nil
}

// dedupeItems keeps the first item of each name and kind: a wanted set wins over the state's.
func dedupeItems(items []dnsItem) []dnsItem {
	seen := map[state.DNSRecord]bool{}
	return slices.DeleteFunc(items, func(it dnsItem) bool {
		if seen[it.key()] {
			return true
		}
		seen[it.key()] = true
		return false
	})
}

// probes are the sets to read for items, in the zones they are published in; current is
// the group's publish.zone.
func probes(items []dnsItem, current string) []dns.Set {
	out := make([]dns.Set, len(items))
	for i, it := range items {
		p := it.probe(current)
		out[i] = dns.Set{Name: p.Name, Kind: p.Kind, Zone: p.Zone}
	}
	return out
}

// recordChange is what the plan says of one item given what the server holds; ok is false
// when nothing changes. adopts is the earlier key's owner t takes the set over from, if any.
func recordChange(it dnsItem, seen dns.Seen, owner, adopts string) (plan.RecordChange, bool) {
	rc := plan.RecordChange{Name: it.name, Kind: string(it.kind), Old: recordTexts(seen.Records)}
	act, ce := dns.Decide(it.want, it.name, it.kind, seen, owner, adopts)
	if act == dns.Adopt {
		rc.Adopted, rc.Owner = dns.AdoptedOwner(seen), owner
		act = dns.Update // for the plan, an update of the owner TXT (and of the records if they differ)
	}
	switch {
	case act == dns.Conflict:
		rc.Action, rc.Reason = plan.Conflict, ce.Error()
		return rc, true
	case it.want != nil && it.unknown:
		// Free or ours: published once the address is known.
		rc.Action, rc.Unknown = plan.Update, true
		if act == dns.Create {
			rc.Action = plan.Create
		}
		return rc, true
	case act == dns.None:
		return rc, false
	}
	rc.Action = map[dns.Action]plan.Action{dns.Create: plan.Create, dns.Update: plan.Update, dns.Delete: plan.Delete}[act]
	if it.want != nil {
		rc.New = recordTexts(it.want.Records())
	}
	return rc, true
}

func recordTexts(rs []dns.Record) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.String()
	}
	return out
}

// addRecord puts rc into node's plan, making the node's entry (in file order, removed nodes
// last) when the node changes nothing else.
func addRecord(p *plan.Plan, g *spec.Group, node string, rc plan.RecordChange) {
	if np := p.Node(node); np != nil {
		np.Records = append(np.Records, rc)
		return
	}
	p.Nodes = append(p.Nodes, plan.NodePlan{Node: node, Removed: g.Node(node) == nil, Records: []plan.RecordChange{rc}})
	order := func(name string) int {
		if name == "" {
			return -1
		}
		for i, n := range g.Nodes {
			if n.Name == name {
				return i
			}
		}
		return len(g.Nodes)
	}
	slices.SortStableFunc(p.Nodes, func(a, b plan.NodePlan) int { return order(a.Node) - order(b.Node) })
}

// serviceIngress reads a Service's status.loadBalancer.ingress: its IPs, or host names.
func serviceIngress(svc *corev1.Service) []string {
	var out []string
	for _, x := range svc.Status.LoadBalancer.Ingress {
		if x.IP != "" {
			out = append(out, x.IP)
		} else if x.Hostname != "" {
			out = append(out, x.Hostname)
		}
	}
	return out
}
