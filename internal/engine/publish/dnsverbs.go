package publish

import (
	"context"
	"fmt"

	"slipway.dev/slipway/internal/dns"
	"slipway.dev/slipway/internal/engine/lane"
	"slipway.dev/slipway/internal/state"
)

// The DNS lane of suspend, resume and destroy (SPEC §7, FR-022): suspend retires the
// published names and keeps the mail records, resume publishes a node's names again once it
// is ready, destroy retires everything. Each set is retired only while it is still ours.

// retireItems are every set of the group the file wants or the state recorded, as items to
// retire; names only unless mail is set.
func retireItems(t lane.Target, doc *state.Document, mail bool) []dnsItem {
	var out []dnsItem
	for _, it := range dedupeItems(append(wantedDNS(t.Group, false, nil), recordedDNS(doc, nil)...)) {
		if it.kind == dns.KindAddress || mail {
			out = append(out, dnsItem{node: it.node, name: it.name, kind: it.kind, zone: it.zone})
		}
	}
	return out
}

// suspendDNS retires the group's published names before its Deployments go to 0.
func (l *Lane) suspendDNS(ctx context.Context, t lane.Target, rec lane.Recorder) error {
	if t.Group.Publish == nil {
		return nil
	}
	var items []dnsItem
	rec.View(func(d *state.Document) { items = retireItems(t, d, false) })
	if err := l.syncDNS(ctx, t, rec, items); err != nil {
		return fmt.Errorf("suspend: dns: %w", err)
	}
	return nil
}

// resumeDNS publishes node's names (and the mail records on the relay) after it resumed.
func (l *Lane) resumeDNS(ctx context.Context, t lane.Target, rec lane.Recorder, node string) error {
	if t.Group.Publish == nil {
		return nil
	}
	addr, err := l.nodeAddress(ctx, t, node)
	if err != nil {
		return err
	}
	var items []dnsItem
	for _, it := range wantedDNS(t.Group, false, map[string][]string{node: addr}) {
		if it.node != node {
			continue
		}
		if it.unknown {
			return fmt.Errorf("resume: dns %s: the node has no address to publish it at (its Service %s has no load-balancer ingress)", it.name, node)
		}
		items = append(items, it)
	}
	if err := l.syncDNS(ctx, t, rec, items); err != nil {
		return fmt.Errorf("resume: dns: %w", err)
	}
	return nil
}

// destroyDNS retires every set of the group, names and mail, before its objects go.
func (l *Lane) destroyDNS(ctx context.Context, t lane.Target) error {
	if t.Group.Publish == nil {
		return nil
	}
	doc, err := lane.ReadState(ctx, t)
	if err != nil {
		return err
	}
	if doc == nil {
		doc = &state.Document{Group: t.Group.Name}
	}
	if err := l.syncDNS(ctx, t, l.env.NewRecorder(t.Store, doc), retireItems(t, doc, true)); err != nil {
		return fmt.Errorf("destroy: dns: %w", err)
	}
	return nil
}
