package publish

import (
	"context"
	"fmt"
	"time"

	"slipway.dev/slipway/internal/engine/lane"
	"slipway.dev/slipway/internal/plan"
)

// publishDNS publishes the node's names at its address, and on the mail relay the zone's
// mail records, after its rollout (SPEC §7). The address is the one the address lane waited
// for in this run, else the one its Service has now: the plan may not have known it.
func (l *Lane) publishDNS(ctx context.Context, nr *lane.NodeRun, st plan.Step) error {
	addr := lane.Get(&nr.Slots, addressKey)
	if len(addr) == 0 {
		var err error
		if addr, err = l.pollAddress(ctx, nr.Target, st.Node); err != nil {
			return err
		}
	}
	addrs := map[string][]string{}
	if len(addr) > 0 {
		addrs[st.Node] = addr
	}
	want := map[string]dnsItem{}
	for _, it := range wantedDNS(nr.Target.Group, nr.Plan.Suspended, addrs) {
		if it.node == st.Node {
			want[it.name+"\x00"+string(it.kind)] = it
		}
	}
	var items []dnsItem
	planned, _ := st.Payload.(plan.DNSPublish)
	for _, rc := range planned.Records {
		it, ok := want[rc.Name+"\x00"+rc.Kind]
		if !ok {
			continue // the plan was made from another file: nothing of it to publish here
		}
		if it.unknown {
			return fmt.Errorf("dns %s: the node has no address to publish it at (its Service %s has no load-balancer ingress)", it.name, st.Node)
		}
		items = append(items, it)
	}
	l.emitDNS(st)
	return l.syncDNS(ctx, nr.Target, nr.Rec, items)
}

// pollAddress waits up to the group's addressTimeout for the node's address, when no step of
// the address lane ran in this run (a node with only records to publish): a load balancer
// gives it some time after the Service is made.
func (l *Lane) pollAddress(ctx context.Context, t lane.Target, node string) ([]string, error) {
	deadline := time.Now().Add(t.Group.Publish.AddressTimeout)
	for {
		addr, err := l.nodeAddress(ctx, t, node)
		if err != nil || len(addr) > 0 || !time.Now().Before(deadline) {
			return addr, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}
