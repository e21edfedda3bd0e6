package dns

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	mdns "github.com/miekg/dns"
)

// Config says where and how to reach the server.
type Config struct {
	Server    string // host:port
	Zone      string // the zone every update is for, no trailing dot
	Key       string // TSIG key name
	Algorithm string // hmac-sha256, …
	Timeout   time.Duration
}

// Client reads and updates one zone on one server. It is safe for concurrent use.
type Client struct {
	cfg     Config
	secret  map[string]string // TSIG key → secret, handed to miekg's client only
	q       *mdns.Client      // queries, unsigned
	mu      sync.Mutex
	updates int               // UPDATE messages sent
	cuts    map[string]string // a zone → the server's zone that holds it, found by zoneCut
	// noTransfer: the server refused a zone transfer (or it broke off); Read queries.
	noTransfer bool
}

// New returns a Client for cfg, signing its updates with secret (base64).
func New(cfg Config, secret string) (*Client, error) {
	if cfg.Server == "" || cfg.Zone == "" || cfg.Key == "" {
		return nil, errors.New("dns: server, zone and key are required")
	}
	if cfg.Algorithm == "" {
		cfg.Algorithm = "hmac-sha256"
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 10 * time.Second
	}
	cfg.Zone = strings.TrimSuffix(strings.ToLower(cfg.Zone), ".")
	return &Client{
		cfg:    cfg,
		secret: map[string]string{mdns.Fqdn(cfg.Key): secret},
		q:      &mdns.Client{Net: "tcp", Timeout: cfg.Timeout},
	}, nil
}

// String names the client without its secret, so that no %v of it prints the key.
func (c *Client) String() string   { return "dns server " + c.cfg.Server + " zone " + c.cfg.Zone }
func (c *Client) GoString() string { return c.String() }

// Zone is the zone of the group file, no trailing dot: the names are in it.
func (c *Client) Zone() string { return c.cfg.Zone }

// zoneOf is the zone a set is in: its own (Set.Zone: a record published before publish.zone
// changed is retired in the zone it was published in), else the client's.
func (c *Client) zoneOf(s Set) string {
	if s.Zone == "" {
		return c.cfg.Zone
	}
	return strings.TrimSuffix(strings.ToLower(s.Zone), ".")
}

// zoneCut finds the server's zone that holds zone, which UPDATEs name: the group's zone may
// be a name inside it (a test's own domain under dev.test, say). The SOA query's answer (zone
// is a zone) or its authority section (it is a name inside one) says.
func (c *Client) zoneCut(ctx context.Context, zone string) (string, error) {
	c.mu.Lock()
	z := c.cuts[zone]
	c.mu.Unlock()
	if z != "" {
		return z, nil
	}
	m := new(mdns.Msg)
	m.SetQuestion(mdns.Fqdn(zone), mdns.TypeSOA)
	r, _, err := c.q.ExchangeContext(ctx, m, c.cfg.Server)
	if err != nil {
		return "", fmt.Errorf("%s: find the zone of %s: %w", c, zone, err)
	}
	for _, rr := range append(r.Answer, r.Ns...) {
		if soa, ok := rr.(*mdns.SOA); ok && mdns.IsSubDomain(soa.Hdr.Name, mdns.Fqdn(zone)) {
			z = soa.Hdr.Name
			break
		}
	}
	if z == "" {
		return "", fmt.Errorf("%s: the server is not authoritative for %s (SOA query: %s)", c, zone, mdns.RcodeToString[r.Rcode])
	}
	c.mu.Lock()
	if c.cuts == nil {
		c.cuts = map[string]string{}
	}
	c.cuts[zone] = z
	c.mu.Unlock()
	return z, nil
}

// Updates is the number of UPDATE messages the client has sent.
func (c *Client) Updates() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.updates
}

// readers bounds the connections one Read keeps open to the server when it queries.
const readers = 4

// Read returns what the server holds for each set (given by name and kind), in the order of
// sets. For many sets it reads the whole zone in one transfer; when the server refuses that
// (or for a few sets) it queries set by set, over a few TCP connections kept open. A refused
// transfer is not asked for again by this client.
func (c *Client) Read(ctx context.Context, sets []Set) ([]Seen, error) {
	c.mu.Lock()
	try := len(sets) >= transferMin && !c.noTransfer
	c.mu.Unlock()
	if try {
		z, err := c.transfer(ctx)
		if err == nil {
			return c.readTransferred(ctx, sets, z)
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%s: read: %w", c, ctx.Err())
		}
		c.mu.Lock()
		c.noTransfer = true
		c.mu.Unlock()
	}
	return c.queryAll(ctx, sets)
}

// readTransferred reads each set from z, the transfer of the client's zone; a set in another
// zone of the server (published before publish.zone changed) is queried.
func (c *Client) readTransferred(ctx context.Context, sets []Set, z zoneRecords) ([]Seen, error) {
	out := make([]Seen, len(sets))
	var elsewhere []int
	for i, s := range sets {
		if c.zoneOf(s) != c.cfg.Zone {
			elsewhere = append(elsewhere, i)
			continue
		}
		out[i], _ = seenOf(s, func(name, typ string) ([]Record, error) { return z.lookup(name, typ), nil })
	}
	if len(elsewhere) == 0 {
		return out, nil
	}
	rest := make([]Set, len(elsewhere))
	for j, i := range elsewhere {
		rest[j] = sets[i]
	}
	seen, err := c.queryAll(ctx, rest)
	if err != nil {
		return nil, err
	}
	for j, i := range elsewhere {
		out[i] = seen[j]
	}
	return out, nil
}

// queryAll reads each set with queries, over up to readers TCP connections kept open.
// Answers a wildcard made up are left out (wildcards.go), as a transfer has none.
func (c *Client) queryAll(ctx context.Context, sets []Set) ([]Seen, error) {
	out := make([]Seen, len(sets))
	errs := make([]error, len(sets))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(readers, len(sets)) {
		wg.Go(func() {
			var conn *mdns.Conn
			defer func() {
				if conn != nil {
					conn.Close()
				}
			}()
			for i := range next {
				w := c.realAnswers(&conn)
				out[i], errs[i] = seenOf(sets[i], func(name, typ string) ([]Record, error) {
					return w.lookup(ctx, name, typ)
				})
			}
		})
	}
	for i := range sets {
		if ctx.Err() != nil {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("%s: read: %w", c, err)
	}
	return out, errors.Join(errs...)
}

// seenOf is what the server holds for s, read through lookup: its owner TXT, then the
// records of its kind at its name.
func seenOf(s Set, lookup func(name, typ string) ([]Record, error)) (Seen, error) {
	var seen Seen
	owner, err := lookup(s.OwnerName(), "TXT")
	if err != nil {
		return seen, err
	}
	for _, r := range owner {
		seen.Owner = append(seen.Owner, r.Value)
	}
	for _, t := range s.Kind.Types() {
		rs, err := lookup(s.Name, t)
		if err != nil {
			return seen, err
		}
		for _, r := range rs {
			if s.Kind == KindSPF && !IsSPF(r.Value) {
				continue // the apex's other TXT records are nobody's business here
			}
			seen.Records = append(seen.Records, r)
		}
	}
	slices.Sort(seen.Owner)
	slices.SortFunc(seen.Records, compareRecords)
	return seen, nil
}

// query asks for the records of type typ at name, on *conn (dialled, or dialled again after
// an error, once).
func (c *Client) query(ctx context.Context, conn **mdns.Conn, name, typ string) ([]Record, error) {
	r, err := c.exchange(ctx, conn, name, typ)
	if err != nil {
		return nil, err
	}
	if r.Rcode != mdns.RcodeSuccess && r.Rcode != mdns.RcodeNameError {
		return nil, &rcodeError{fmt.Errorf("%s: query %s %s: %s", c, name, typ, mdns.RcodeToString[r.Rcode])}
	}
	var out []Record
	for _, rr := range r.Answer {
		h := rr.Header()
		if !strings.EqualFold(h.Name, mdns.Fqdn(name)) || mdns.TypeToString[h.Rrtype] != typ {
			continue // a CNAME's target, say
		}
		out = append(out, Record{Type: typ, Value: rdata(rr), TTL: h.Ttl})
	}
	return out, nil
}

// rcodeError is a query the server answered with an error code (REFUSED, say): it was
// reached, and said no.
type rcodeError struct{ error }

func (e *rcodeError) Unwrap() error { return e.error }

// exchange sends the question typ at name on *conn (dialled, or dialled again after an error,
// once) and returns the server's answer as it came.
func (c *Client) exchange(ctx context.Context, conn **mdns.Conn, name, typ string) (*mdns.Msg, error) {
	m := new(mdns.Msg)
	m.SetQuestion(mdns.Fqdn(name), mdns.StringToType[typ])
	for attempt := 0; ; attempt++ {
		var err error
		if *conn == nil {
			if *conn, err = c.q.DialContext(ctx, c.cfg.Server); err != nil {
				return nil, fmt.Errorf("%s: query %s %s: %w", c, name, typ, err)
			}
		}
		r, _, err := c.q.ExchangeWithConnContext(ctx, m, *conn)
		if err == nil {
			return r, nil
		}
		(*conn).Close()
		*conn = nil
		if attempt == 1 || ctx.Err() != nil {
			return nil, fmt.Errorf("%s: query %s %s: %w", c, name, typ, err)
		}
	}
}

// rdata is rr's data as Set values write it.
func rdata(rr mdns.RR) string {
	switch v := rr.(type) {
	case *mdns.A:
		return v.A.String()
	case *mdns.AAAA:
		return v.AAAA.String()
	case *mdns.CNAME:
		return strings.TrimSuffix(strings.ToLower(v.Target), ".")
	case *mdns.MX:
		return fmt.Sprintf("%d %s", v.Preference, strings.TrimSuffix(strings.ToLower(v.Mx), "."))
	case *mdns.TXT:
		return wireTXT(v)
	}
	return strings.TrimPrefix(rr.String(), rr.Header().String())
}
