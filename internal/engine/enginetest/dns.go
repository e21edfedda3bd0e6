// Package enginetest holds the stand-ins the engine's tests and its lanes' tests share: each
// plays, in memory, a server or a part of the cluster the engine reaches through an interface
// (named as stand-ins, never used outside tests).
package enginetest

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"

	"slipway.dev/slipway/internal/dns"
	"slipway.dev/slipway/internal/spec"
)

// DNS plays an authoritative server in memory: the records of each set (by name and
// kind) and its owner TXT, read back as dns.Client reads them and changed by UPDATEs whose
// prerequisites hold the owner TXT read. It logs each UPDATE ("create web.example.org").
type DNS struct {
	// Zone is the client's zone (the group's publish.zone): an UPDATE for a set that names
	// no zone of its own is for it, and the server refuses one whose name is outside
	// (NOTZONE). "": any.
	Zone    string
	mu      sync.Mutex
	sets    map[setKey]dns.Seen
	updates []string
	OnApply func(c dns.Change) // called before an UPDATE is judged, outside the lock
}

type setKey struct {
	name string
	kind dns.Kind
}

// NewDNS returns an empty server.
func NewDNS() *DNS { return &DNS{sets: map[setKey]dns.Seen{}} }

func (d *DNS) Read(_ context.Context, sets []dns.Set) ([]dns.Seen, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]dns.Seen, len(sets))
	for i, s := range sets {
		out[i] = d.sets[setKey{s.Name, s.Kind}]
	}
	return out, nil
}

func (d *DNS) Apply(_ context.Context, c dns.Change) error {
	if c.Action == dns.None || c.Action == dns.Conflict {
		return nil
	}
	if d.OnApply != nil {
		d.OnApply(c)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	k := setKey{c.Set.Name, c.Set.Kind}
	if zone := cmp.Or(c.Set.Zone, d.Zone); zone != "" && !spec.InZone(k.name, zone) {
		return fmt.Errorf("fake dns: %s %s: the server answered NOTZONE (the UPDATE is for zone %s)", c.Action, k.name, zone)
	}
	now := d.sets[k]
	switch c.Action {
	case dns.Create:
		if len(now.Owner) > 0 || len(now.Records) > 0 {
			return &dns.ConflictError{Name: k.name, Kind: k.kind, Changed: true}
		}
	default:
		if !slices.Equal(now.Owner, c.Seen.Owner) {
			return &dns.ConflictError{Name: k.name, Kind: k.kind, Changed: true}
		}
	}
	d.updates = append(d.updates, fmt.Sprintf("%s %s", c.Action, c.Set.Name))
	if c.Action == dns.Delete {
		delete(d.sets, k)
		return nil
	}
	d.sets[k] = dns.Seen{Owner: []string{c.Set.OwnerTextOf(c.Owner)}, Records: c.Set.Records()}
	return nil
}

// Put sets what the server holds for a set, as another party (or an earlier run) left it.
func (d *DNS) Put(name string, kind dns.Kind, seen dns.Seen) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.sets[setKey{name, kind}] = seen
}

// Records are the records the server holds at name for kind, as text ("A 192.0.2.7").
func (d *DNS) Records(name string, kind dns.Kind) []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []string
	for _, r := range d.sets[setKey{name, kind}].Records {
		out = append(out, r.String())
	}
	return out
}

// Updates returns the UPDATEs sent so far.
func (d *DNS) Updates() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.updates)
}
