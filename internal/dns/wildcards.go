package dns

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"slices"
	"strings"

	mdns "github.com/miekg/dns"
)

// A wildcard (`*.example.org A …`) answers a query for any name under it that does not exist,
// with records whose owner is the name asked for: a plain query cannot tell them from records
// at the name. A zone transfer holds the wildcard as the one record it is, and an UPDATE's
// prerequisites see only records that exist (RFC 2136 3.2.5), so a read by queries leaves
// synthesized answers out, or a free name would read as taken (issue 35 item 9).
//
// Without DNSSEC an answer carries no mark of it. But a name that does not exist shares its
// closest encloser, and so the wildcard that answers for it (RFC 4592 3.3.1), with any name
// below it; a name that exists is never answered by a wildcard, and neither is a name below
// it unless it has a wildcard of its own. So a random name below the one read answers the
// same when, and only when, the answer was synthesized (or the name has its own wildcard
// holding exactly its records, which reads as free: the create is then refused by the
// server, whose prerequisite sees the records, and never written over them).

// realAnswers keeps, through one set's lookups, which names are known to exist: a name with a
// real answer, and its parent (an owner TXT at _slipway.<name> makes <name> exist). An
// answer at a name known to exist needs no probe: slipway's own names, read back, cost none.
type realAnswers struct {
	c      *Client
	conn   **mdns.Conn
	label  string
	exists map[string]bool
}

func (c *Client) realAnswers(conn **mdns.Conn) *realAnswers {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return &realAnswers{c: c, conn: conn, label: "_slipway-probe-" + hex.EncodeToString(b), exists: map[string]bool{}}
}

// lookup is Client.query without the answers a wildcard made up.
func (w *realAnswers) lookup(ctx context.Context, name, typ string) ([]Record, error) {
	name = strings.ToLower(strings.TrimSuffix(name, "."))
	rs, err := w.c.query(ctx, w.conn, name, typ)
	if err != nil || len(rs) == 0 {
		return rs, err
	}
	if !w.exists[name] && !(typ == "TXT" && ownerTexts(rs)) { // slipway writes no wildcard
		below, err := w.c.query(ctx, w.conn, w.label+"."+name, typ)
		var rc *rcodeError
		if errors.As(err, &rc) {
			below, err = nil, nil // refused, say: nothing synthesized there to compare with
		}
		if err != nil {
			return nil, err
		}
		if sameRecords(rs, below) {
			return nil, nil
		}
	}
	w.exists[name] = true
	if _, parent, ok := strings.Cut(name, "."); ok {
		w.exists[parent] = true
	}
	return rs, nil
}

// ownerTexts reports whether every record of rs is an owner TXT of slipway's.
func ownerTexts(rs []Record) bool {
	for _, r := range rs {
		if _, _, ok := parseOwner(r.Value); !ok {
			return false
		}
	}
	return true
}

// sameRecords reports whether a and b hold the same records (type, value and TTL), in any order.
func sameRecords(a, b []Record) bool {
	if len(a) != len(b) {
		return false
	}
	a, b = slices.Clone(a), slices.Clone(b)
	byAll := func(x, y Record) int {
		if c := compareRecords(x, y); c != 0 {
			return c
		}
		return cmp.Compare(x.TTL, y.TTL)
	}
	slices.SortFunc(a, byAll)
	slices.SortFunc(b, byAll)
	return slices.Equal(a, b)
}
