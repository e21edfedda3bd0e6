package publish

import (
	"context"

	"slipway.dev/slipway/internal/dns"
	"slipway.dev/slipway/internal/engine/lane"
	"slipway.dev/slipway/internal/event"
	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/state"
)

// retireDNS retires the node's record sets the plan says are no longer wanted (a name
// removed from the file, the node removed), each only while it is still ours, in the zone
// the state says it was published in.
func (l *Lane) retireDNS(ctx context.Context, nr *lane.NodeRun, st plan.Step) error {
	planned, _ := st.Payload.(plan.DNSRetire)
	items := make([]dnsItem, len(planned.Records))
	nr.Rec.View(func(d *state.Document) {
		for i, rc := range planned.Records {
			items[i] = dnsItem{node: st.Node, name: rc.Name, kind: dns.Kind(rc.Kind), zone: recordedZone(d, rc.Name, rc.Kind)}
		}
	})
	l.emitDNS(st)
	return l.syncDNS(ctx, nr.Target, nr.Rec, items)
}

// recordedZone is the zone the state says the set name/kind was published in, "" when it
// does not say.
func recordedZone(doc *state.Document, name, kind string) string {
	for _, ns := range doc.Nodes {
		for _, r := range ns.DNS {
			if r.Name == name && r.Kind == kind {
				return r.Zone
			}
		}
	}
	return ""
}

// emitDNS says which step of the DNS lane starts.
func (l *Lane) emitDNS(st plan.Step) {
	l.env.Emit(event.Event{Node: st.Node, Phase: event.PhaseApply, Message: st.String()})
}
