package dns

import (
	"context"
	"fmt"
	"time"

	mdns "github.com/miekg/dns"
)

// Change is one UPDATE: what Decide said for a set, with what was read for it.
type Change struct {
	Action Action
	Set    Set  // the wanted set (Create, Update) or the retired one's name and kind (Delete)
	Seen   Seen // the owner TXT the prerequisites hold the server to; the old values
	Owner  string
}

// Apply sends c as one signed UPDATE whose prerequisites make it safe: a create only while
// the name holds neither an owner TXT nor records of the set's types, an update or delete
// only while the owner TXT is exactly the one read (ours). An adopt is an update that, while
// the records are the wanted ones, rewrites only the owner TXT (the records stay as they
// are, never deleted and made again), under the same prerequisite: the earlier owner's TXT is
// still there, so a set someone else took meanwhile is not taken from them. A prerequisite that fails is a
// *ConflictError with Changed set. None and Conflict send nothing.
func (c *Client) Apply(ctx context.Context, ch Change) error {
	if ch.Action == None || ch.Action == Conflict {
		return nil
	}
	zone, err := c.zoneCut(ctx, c.zoneOf(ch.Set))
	if err != nil {
		return err
	}
	m, err := c.message(zone, ch)
	if err != nil {
		return err
	}
	m.SetTsig(mdns.Fqdn(c.cfg.Key), mdns.Fqdn(c.cfg.Algorithm), 300, time.Now().Unix())
	cl := &mdns.Client{Net: "tcp", Timeout: c.cfg.Timeout, TsigSecret: c.secret}
	c.mu.Lock()
	c.updates++
	c.mu.Unlock()
	r, _, err := cl.ExchangeContext(ctx, m, c.cfg.Server)
	if err != nil {
		return fmt.Errorf("%s: %s %s: %w", c, ch.Action, ch.Set.Name, err)
	}
	switch r.Rcode {
	case mdns.RcodeSuccess:
		return nil
	case mdns.RcodeYXRrset, mdns.RcodeNXRrset, mdns.RcodeYXDomain, mdns.RcodeNameError:
		return &ConflictError{Name: ch.Set.Name, Kind: ch.Set.Kind, Changed: true}
	}
	return fmt.Errorf("%s: %s %s: the server answered %s", c, ch.Action, ch.Set.Name, mdns.RcodeToString[r.Rcode])
}

// message builds the UPDATE of ch: prerequisites, then deletions, then additions.
func (c *Client) message(zone string, ch Change) (*mdns.Msg, error) {
	s := ch.Set
	m := new(mdns.Msg)
	m.SetUpdate(zone)
	ownerName := mdns.Fqdn(s.OwnerName())
	ownerType := &mdns.TXT{Hdr: mdns.RR_Header{Name: ownerName, Rrtype: mdns.TypeTXT, Class: mdns.ClassINET}}
	switch ch.Action {
	case Create:
		m.RRsetNotUsed([]mdns.RR{ownerType})
		if s.Kind != KindSPF { // the apex's TXT set holds others' values beside the SPF
			m.RRsetNotUsed(typed(s.Name, s.Kind.Types()))
		}
	case Adopt:
		if len(ch.Seen.Owner) != 1 {
			return nil, &ConflictError{Name: s.Name, Kind: s.Kind, Records: ch.Seen.Records}
		}
		if !s.Holds(ch.Seen) {
			return c.message(zone, Change{Action: Update, Set: s, Seen: ch.Seen, Owner: ch.Owner})
		}
		m.Used([]mdns.RR{&mdns.TXT{Hdr: ownerType.Hdr, Txt: splitTXT(ch.Seen.Owner[0])}})
		m.RemoveRRset([]mdns.RR{ownerType})
		owner := Record{Type: "TXT", Value: s.OwnerTextOf(ch.Owner), TTL: s.TTL}
		orr, err := owner.rr(s.OwnerName())
		if err != nil {
			return nil, err
		}
		m.Insert([]mdns.RR{orr})
		return m, nil
	case Update, Delete:
		if len(ch.Seen.Owner) != 1 {
			return nil, &ConflictError{Name: s.Name, Kind: s.Kind, Records: ch.Seen.Records}
		}
		read := &mdns.TXT{Hdr: ownerType.Hdr, Txt: splitTXT(ch.Seen.Owner[0])}
		m.Used([]mdns.RR{read})
		if s.Kind == KindSPF {
			mine, _, ok := splitSPF(ch.Seen)
			if !ok {
				return nil, &ConflictError{Name: s.Name, Kind: s.Kind, Records: ch.Seen.Records, OtherSPF: true}
			}
			old, err := rrs(s.Name, mine) // another party's beside it stays
			if err != nil {
				return nil, err
			}
			m.Remove(old)
		} else {
			m.RemoveRRset(typed(s.Name, s.Kind.Types()))
		}
		m.RemoveRRset([]mdns.RR{ownerType})
	default:
		return nil, fmt.Errorf("dns name %s: no UPDATE for action %q", s.Name, ch.Action)
	}
	if ch.Action == Delete {
		return m, nil
	}
	add, err := rrs(s.Name, s.Records())
	if err != nil {
		return nil, err
	}
	owner := Record{Type: "TXT", Value: s.OwnerTextOf(ch.Owner), TTL: s.TTL}
	orr, err := owner.rr(s.OwnerName())
	if err != nil {
		return nil, err
	}
	m.Insert(append(add, orr))
	return m, nil
}

// typed are empty records of each type at name: what RRset prerequisites and deletions name.
func typed(name string, types []string) []mdns.RR {
	out := make([]mdns.RR, len(types))
	for i, t := range types {
		out[i] = &mdns.ANY{Hdr: mdns.RR_Header{Name: mdns.Fqdn(name), Rrtype: mdns.StringToType[t], Class: mdns.ClassINET}}
	}
	return out
}

func rrs(name string, records []Record) ([]mdns.RR, error) {
	var out []mdns.RR
	for _, r := range records {
		rr, err := r.rr(name)
		if err != nil {
			return nil, err
		}
		out = append(out, rr)
	}
	return out, nil
}
