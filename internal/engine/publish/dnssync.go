package publish

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"slipway.dev/slipway/internal/dns"
	"slipway.dev/slipway/internal/engine/lane"
	"slipway.dev/slipway/internal/event"
	"slipway.dev/slipway/internal/state"
)

// syncDNS brings each item to what it wants on the server (its set, or retired), reading
// them first: one UPDATE per set that differs, none for a set already right. The state
// lists a set before its UPDATE goes (a run killed in between retires it later if it came)
// and drops it after it is retired. A conflict is never touched; its error joins the others'
// while the other sets go on.
func (l *Lane) syncDNS(ctx context.Context, t lane.Target, rec lane.Recorder, items []dnsItem) error {
	if len(items) == 0 {
		return nil
	}
	srv, owner, seen, err := l.readDNS(ctx, t, items)
	if err != nil {
		return err
	}
	adopts := make([]string, len(items)) // the earlier release's owner of each set t takes over
	if rec != nil {
		rec.View(func(d *state.Document) {
			for i, it := range items {
				adopts[i] = dnsAdopts(t, d, it, owner)
			}
		})
	}
	var errs []error
	for i, it := range items {
		if err := ctx.Err(); err != nil {
			return errors.Join(append(errs, fmt.Errorf("dns: interrupted before %s: %w", it.name, err))...)
		}
		act, ce := dns.Decide(it.want, it.name, it.kind, seen[i], owner, adopts[i])
		if ce != nil {
			errs = append(errs, ce)
			continue
		}
		if act == dns.None {
			if it.want == nil {
				err = l.recordDNS(ctx, rec, it, false) // gone already: the state forgets it
			}
			errs = append(errs, err)
			continue
		}
		set := it.probe(t.Group.Publish.Zone)
		if it.want != nil {
			if err := l.recordDNS(ctx, rec, it, true); err != nil {
				return errors.Join(append(errs, err)...)
			}
		}
		l.env.Emit(event.Event{Node: it.node, Phase: event.PhaseApply, Message: fmt.Sprintf("dns: %s %s", act, describeSet(set))})
		if err := srv.Apply(ctx, dns.Change{Action: act, Set: set, Seen: seen[i], Owner: owner}); err != nil {
			errs = append(errs, err)
			continue
		}
		if it.want == nil {
			errs = append(errs, l.recordDNS(ctx, rec, it, false))
		}
	}
	return errors.Join(errs...)
}

// describeSet is "web.dev.test A 192.0.2.1", or the name alone for a retired set.
func describeSet(s dns.Set) string {
	out := s.Name
	if s.Kind != dns.KindAddress {
		out += " (" + string(s.Kind) + ")"
	}
	for _, r := range s.Records() {
		out += " " + r.String()
	}
	return out
}

// recordDNS adds it to its node's published sets in the state (published true), with the
// zone it is published in, or drops it.
func (l *Lane) recordDNS(ctx context.Context, rec lane.Recorder, it dnsItem, published bool) error {
	if rec == nil {
		return nil
	}
	k := state.DNSRecord{Name: it.name, Kind: string(it.kind), Zone: it.zone}
	same := func(r state.DNSRecord) bool { return r.Name == k.Name && r.Kind == k.Kind }
	var has, listed bool
	rec.View(func(d *state.Document) {
		ns := d.Nodes[it.node]
		has = ns != nil && slices.Contains(ns.DNS, k)
		listed = ns != nil && slices.ContainsFunc(ns.DNS, same)
	})
	if published && has || !published && !listed {
		return nil
	}
	verb := "before publishing"
	if !published {
		verb = "after retiring"
	}
	return rec.Update(ctx, verb+" dns "+it.name, func(d *state.Document) {
		ns := lane.NodeOf(d, it.node)
		if published {
			for _, other := range d.Nodes { // a name moved from another node is this one's now
				other.DNS = slices.DeleteFunc(other.DNS, same)
			}
			ns.DNS = append(ns.DNS, k)
		} else {
			ns.DNS = slices.DeleteFunc(ns.DNS, same)
		}
	})
}
