package engine

import (
	"context"

	"slipway.dev/slipway/internal/dns"
	"slipway.dev/slipway/internal/event"
	"slipway.dev/slipway/internal/plan"
)

// retireDNS retires the node's record sets the plan says are no longer wanted (a name
// removed from the file, the node removed), each only while it is still ours.
func (e *Engine) retireDNS(ctx context.Context, r *run, st plan.Step) error {
	items := make([]dnsItem, len(st.Records))
	for i, rc := range st.Records {
		items[i] = dnsItem{node: st.Node, name: rc.Name, kind: dns.Kind(rc.Kind)}
	}
	e.emitDNS(st)
	return e.syncDNS(ctx, r.t, r.rec, items)
}

// emitDNS says which step of the DNS lane starts.
func (e *Engine) emitDNS(st plan.Step) {
	e.emit(event.Event{Node: st.Node, Phase: event.PhaseApply, Message: st.String()})
}
