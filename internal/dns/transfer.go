package dns

import (
	"context"
	"fmt"
	"strings"
	"time"

	mdns "github.com/miekg/dns"
)

// transferMin is the number of sets from which Read asks for the whole zone: below it, the
// queries (four a set at most) cost less than a zone of unknown size.
const transferMin = 16

// zoneRecords are a zone's records by lowercase FQDN and type.
type zoneRecords map[[2]string][]Record

func (z zoneRecords) lookup(name, typ string) []Record {
	return z[[2]string{strings.ToLower(mdns.Fqdn(name)), typ}]
}

// transfer reads the server's zone that holds cfg.Zone in one AXFR signed with the client's
// key, its answers' signatures verified. Any failure (the server refuses the transfer, as its
// ACL may, or the stream breaks) is an error: Read then queries set by set.
//
// A transfer holds the records as they are: a wildcard is not expanded into the names it
// would answer for. That is what an UPDATE's prerequisites see too.
func (c *Client) transfer(ctx context.Context) (zoneRecords, error) {
	zone, err := c.zoneCut(ctx, c.cfg.Zone)
	if err != nil {
		return nil, err
	}
	conn, err := c.q.DialContext(ctx, c.cfg.Server)
	if err != nil {
		return nil, fmt.Errorf("%s: transfer %s: %w", c, zone, err)
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	m := new(mdns.Msg)
	m.SetAxfr(zone)
	m.SetTsig(mdns.Fqdn(c.cfg.Key), mdns.Fqdn(c.cfg.Algorithm), 300, time.Now().Unix())
	t := &mdns.Transfer{Conn: conn, TsigSecret: c.secret, ReadTimeout: c.cfg.Timeout, WriteTimeout: c.cfg.Timeout}
	envelopes, err := t.In(m, c.cfg.Server)
	if err != nil {
		return nil, fmt.Errorf("%s: transfer %s: %w", c, zone, err)
	}
	out := zoneRecords{}
	var failed error
	for e := range envelopes {
		if e.Error != nil {
			failed = e.Error // the channel closes after it
			continue
		}
		for _, rr := range e.RR {
			h := rr.Header()
			k := [2]string{strings.ToLower(h.Name), mdns.TypeToString[h.Rrtype]}
			out[k] = append(out[k], Record{Type: k[1], Value: rdata(rr), TTL: h.Ttl})
		}
	}
	if failed == nil && ctx.Err() != nil {
		failed = ctx.Err()
	}
	if failed != nil {
		return nil, fmt.Errorf("%s: transfer %s: %w", c, zone, failed)
	}
	// The zone's SOA opens and closes the transfer: once is what the zone holds.
	soa := [2]string{strings.ToLower(zone), "SOA"}
	if s := out[soa]; len(s) > 1 {
		out[soa] = s[:1]
	}
	return out, nil
}
