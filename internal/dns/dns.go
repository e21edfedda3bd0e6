// Package dns publishes a group's names on an authoritative DNS server (SPEC §7): it reads
// records back in one zone transfer signed with the TSIG key, or with plain queries when the
// server refuses the transfer (or for a few names), and changes them with RFC 2136 UPDATEs over
// TCP, signed with TSIG, one UPDATE per change. Ownership is a TXT record beside each set of records,
// `heritage=slipway,owner=<group>/<namespace>@<kube-system UID>,node=<node>` (as external-dns's
// TXT registry does), and every UPDATE carries prerequisites that make it safe on the server:
// a create only while the name holds no such record, a replace or delete only while the owner
// TXT is the one read, and ours. Deciding what to change (Decide) is pure; Client does the I/O.
// The TSIG secret never leaves the Client: no error, no String of it holds it.
package dns

import (
	"encoding/hex"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"

	mdns "github.com/miekg/dns"
)

// Kind is what a Set publishes, which says which records at its name are its own.
type Kind string

const (
	// KindAddress: a published name's A/AAAA (an IP address) or CNAME (a host name); every A,
	// AAAA and CNAME at the name is the set's.
	KindAddress Kind = "address"
	// KindMX: the zone's MX records, at the apex.
	KindMX Kind = "mx"
	// KindSPF: the zone's SPF TXT, one value among the apex's other TXT records; only SPF
	// records (IsSPF) count as the set's.
	KindSPF Kind = "spf"
	// KindDMARC: the TXT at _dmarc.<zone>; every TXT there is the set's.
	KindDMARC Kind = "dmarc"
)

// Set is the records slipway publishes at one name, owned through the TXT at OwnerName.
type Set struct {
	Name   string   `json:"name"` // lower case, no trailing dot: web.dev.test
	Kind   Kind     `json:"kind"`
	Values []string `json:"values,omitempty"` // A/AAAA addresses, a CNAME target, "10 mx.dev.test", TXT text
	TTL    uint32   `json:"ttl,omitempty"`
	Node   string   `json:"node,omitempty"` // the node= of the owner TXT
	// Zone is the zone the set is published in (publish.zone when it was): "" for the
	// Client's. UPDATEs for the set name the server's zone that holds it.
	Zone string `json:"zone,omitempty"`
}

// OwnerName is where the set's owner TXT is: `_slipway.<name>` for a published name and for
// _dmarc; the apex's MX and SPF have their own (`_slipway-mx.<zone>`, `_slipway-spf.<zone>`),
// so that a node may publish the apex itself beside the mail records.
func (s Set) OwnerName() string {
	switch s.Kind {
	case KindMX:
		return "_slipway-mx." + s.Name
	case KindSPF:
		return "_slipway-spf." + s.Name
	}
	return "_slipway." + s.Name
}

// Owner is who owns records: `<group>/<namespace>@<UID of kube-system>`, so that two clusters
// with the same group and namespace do not take each other's records.
func Owner(group, namespace, clusterUID string) string {
	return group + "/" + namespace + "@" + clusterUID
}

// OwnerText is the owner TXT's text for owner and node.
func OwnerText(owner, node string) string {
	return "heritage=slipway,owner=" + owner + ",node=" + node
}

// parseOwner returns the owner and node of an owner TXT's text; ok is false for text that is
// not slipway's.
func parseOwner(text string) (owner, node string, ok bool) {
	f := map[string]string{}
	for part := range strings.SplitSeq(text, ",") {
		k, v, _ := strings.Cut(part, "=")
		f[k] = v
	}
	if f["heritage"] != "slipway" || f["owner"] == "" {
		return "", "", false
	}
	return f["owner"], f["node"], true
}

// Record is one record read at a set's name.
type Record struct {
	Type  string `json:"type"` // A, AAAA, CNAME, MX, TXT
	Value string `json:"value"`
	TTL   uint32 `json:"ttl"`
}

func (r Record) String() string { return r.Type + " " + r.Value }

// Types are the record types a set of kind k holds at its name.
func (k Kind) Types() []string {
	switch k {
	case KindMX:
		return []string{"MX"}
	case KindSPF, KindDMARC:
		return []string{"TXT"}
	}
	return []string{"A", "AAAA", "CNAME"}
}

// Records are the records s publishes at its name, sorted.
func (s Set) Records() []Record {
	var out []Record
	for _, v := range s.Values {
		out = append(out, Record{Type: valueType(s.Kind, v), Value: normalValue(s.Kind, v), TTL: s.TTL})
	}
	slices.SortFunc(out, compareRecords)
	return out
}

// valueType is the record type of value v in a set of kind k: A or AAAA for an IP address,
// CNAME for a host name.
func valueType(k Kind, v string) string {
	switch k {
	case KindMX:
		return "MX"
	case KindSPF, KindDMARC:
		return "TXT"
	}
	ip := net.ParseIP(v)
	switch {
	case ip == nil:
		return "CNAME"
	case ip.To4() != nil:
		return "A"
	}
	return "AAAA"
}

// normalValue writes v as a record read back says it: host names lower case without the
// trailing dot, IP addresses in their canonical form.
func normalValue(k Kind, v string) string {
	switch k {
	case KindSPF, KindDMARC:
		return v
	}
	if ip := net.ParseIP(v); ip != nil {
		return ip.String()
	}
	return strings.TrimSuffix(strings.ToLower(v), ".")
}

func compareRecords(a, b Record) int {
	if c := strings.Compare(a.Type, b.Type); c != 0 {
		return c
	}
	return strings.Compare(a.Value, b.Value)
}

// rr is r at name as a resource record of class IN.
func (r Record) rr(name string) (mdns.RR, error) {
	h := mdns.RR_Header{Name: mdns.Fqdn(name), Rrtype: mdns.StringToType[r.Type], Class: mdns.ClassINET, Ttl: r.TTL}
	bad := func() (mdns.RR, error) {
		return nil, fmt.Errorf("dns name %s: record %s: not a valid %s value", name, r, r.Type)
	}
	switch r.Type {
	case "A", "AAAA":
		ip := net.ParseIP(r.Value)
		if ip == nil {
			return bad()
		}
		if r.Type == "A" {
			return &mdns.A{Hdr: h, A: ip.To4()}, nil
		}
		return &mdns.AAAA{Hdr: h, AAAA: ip}, nil
	case "CNAME":
		return &mdns.CNAME{Hdr: h, Target: mdns.Fqdn(r.Value)}, nil
	case "MX":
		pref, host, ok := strings.Cut(r.Value, " ")
		n, err := strconv.ParseUint(pref, 10, 16)
		if !ok || err != nil {
			return bad()
		}
		return &mdns.MX{Hdr: h, Preference: uint16(n), Mx: mdns.Fqdn(host)}, nil
	case "TXT":
		return &mdns.TXT{Hdr: h, Txt: splitTXT(r.Value)}, nil
	}
	return bad()
}

// IsSPF reports whether a TXT record's text is an SPF record: its version section is
// "v=spf1" (in any case), ended by a space or the end of the text (RFC 7208 4.5).
func IsSPF(text string) bool {
	return len(text) >= 6 && strings.EqualFold(text[:6], "v=spf1") && (len(text) == 6 || text[6] == ' ')
}

// splitTXT cuts text, the record's bytes as they go on the wire, into the character strings
// of a TXT record (255 bytes at most each), each in the escaped form miekg/dns packs back to
// those bytes: a quote or a backslash in the text is itself, not an escape.
func splitTXT(text string) []string {
	var out []string
	for len(text) > 255 {
		out = append(out, escapeTXT(text[:255]))
		text = text[255:]
	}
	return append(out, escapeTXT(text))
}

// escapeTXT writes the bytes of b as miekg/dns's presentation form of a character string.
func escapeTXT(b string) string {
	var sb strings.Builder
	for i := 0; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"' || c == '\\':
			sb.WriteByte('\\')
			sb.WriteByte(c)
		case c < ' ' || c > '~':
			fmt.Fprintf(&sb, "\\%03d", c)
		default:
			sb.WriteByte(c)
		}
	}
	return sb.String()
}

// wireTXT is the text of a TXT record as it is on the wire: its character strings' bytes,
// joined; what was published is compared with it byte for byte, whatever form miekg/dns
// presents (it escapes quotes, backslashes and bytes outside printable ASCII).
func wireTXT(rr *mdns.TXT) string {
	u := new(mdns.RFC3597)
	if err := u.ToRFC3597(rr); err != nil {
		return strings.Join(rr.Txt, "")
	}
	raw, err := hex.DecodeString(u.Rdata)
	if err != nil {
		return strings.Join(rr.Txt, "")
	}
	var sb strings.Builder
	for len(raw) > 0 {
		n := int(raw[0])
		if 1+n > len(raw) {
			break
		}
		sb.Write(raw[1 : 1+n])
		raw = raw[1+n:]
	}
	return sb.String()
}
