package spec

import (
	"fmt"
	"os"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// publish decodes `publish:`; the environment's K8S_GATEWAY and SLIPWAY_DNS_SERVER win over
// the file's values (SPEC §7). The rules across nodes are in validatePublish.
func (d *decoder) publish(n *yaml.Node) *Publish {
	const path = "publish"
	m, ok := d.mapping(n, path, publishFields)
	if !ok {
		return nil
	}
	p := &Publish{Line: deref(n).Line, AddressTimeout: DefaultAddressTimeout, TTL: DefaultTTL}
	if v := m["zone"]; v != nil {
		if s, ok := d.str(v, path+".zone"); ok {
			s = strings.TrimSuffix(s, ".")
			if isSubdomain(s) {
				p.Zone = s
			} else {
				d.errAt(deref(v), path+".zone", "%q is not a DNS name", s)
			}
		}
	} else {
		d.add(p.Line, path+".zone", "is required")
	}
	p.Gateway = d.gateway(m["gateway"], p.Line)
	if v := m["addressTimeout"]; v != nil {
		if t, ok := d.duration(v, path+".addressTimeout"); ok {
			p.AddressTimeout = t
		}
	}
	if v := m["ttl"]; v != nil {
		if t, ok := d.int(v, path+".ttl"); ok {
			if t < 1 || t > 2147483647 {
				d.errAt(deref(v), path+".ttl", "ttl %d is out of range (1-2147483647 seconds)", t)
			} else {
				p.TTL = uint32(t)
			}
		}
	}
	if v := m["dns"]; v != nil {
		p.DNS = d.dns(v, path+".dns")
	} else {
		d.add(p.Line, path+".dns", "is required")
	}
	if v := m["mail"]; v != nil {
		p.Mail = d.mail(v, path+".mail")
	}
	return p
}

// gateway reads `publish.gateway`, or K8S_GATEWAY when it is set.
func (d *decoder) gateway(v *yaml.Node, line int) *GatewayRef {
	const path = "publish.gateway"
	if env := os.Getenv(EnvGateway); env != "" {
		ref, ok := parseGatewayRef(env)
		if !ok {
			d.add(line, path, "environment variable %s %q is not <namespace>/<name>", EnvGateway, env)
			return nil
		}
		ref.From = EnvGateway
		return &ref
	}
	if v == nil {
		return nil
	}
	s, ok := d.str(v, path)
	if !ok {
		return nil
	}
	ref, ok := parseGatewayRef(s)
	if !ok {
		d.errAt(deref(v), path, "%q is not <namespace>/<name> (a namespace and a Gateway name)", s)
		return nil
	}
	ref.From = d.file + ":" + itoa(int32(deref(v).Line))
	return &ref
}

func (d *decoder) dns(n *yaml.Node, path string) DNS {
	out := DNS{Algorithm: DefaultTSIGAlgorithm}
	m, ok := d.mapping(n, path, publishDNSFields)
	if !ok {
		return out
	}
	line := deref(n).Line
	if env := os.Getenv(EnvDNSServer); env != "" {
		if s, ok := normalServer(env); ok {
			out.Server = s
		} else {
			d.add(line, path+".server", "environment variable %s %q is not host:port", EnvDNSServer, env)
		}
	} else if v := m["server"]; v != nil {
		if s, ok := d.str(v, path+".server"); ok {
			if srv, ok := normalServer(s); ok {
				out.Server = srv
			} else {
				d.errAt(deref(v), path+".server", "%q is not host:port (e.g. 192.0.2.53:53)", s)
			}
		}
	} else {
		d.add(line, path+".server", "is required (or set %s)", EnvDNSServer)
	}
	if v := m["key"]; v != nil {
		if s, ok := d.str(v, path+".key"); ok {
			if k := strings.TrimSuffix(s, "."); isSubdomain(k) {
				out.Key = k
			} else {
				d.errAt(deref(v), path+".key", "%q is not a TSIG key name (a DNS name)", s)
			}
		}
	} else {
		d.add(line, path+".key", "is required")
	}
	if v := m["algorithm"]; v != nil {
		if s, ok := d.str(v, path+".algorithm"); ok {
			if a := strings.ToLower(strings.TrimSuffix(s, ".")); slices.Contains(TSIGAlgorithms, a) {
				out.Algorithm = a
			} else {
				d.errAt(deref(v), path+".algorithm", "%q is not one of %s", s, strings.Join(TSIGAlgorithms, ", "))
			}
		}
	}
	// The secret is read now only to fail before any change; its value is not kept.
	if _, err := out.Secret(); err != nil {
		d.add(line, path, "%v", err)
	}
	return out
}

func (d *decoder) mail(n *yaml.Node, path string) *Mail {
	m, ok := d.mapping(n, path, publishMailFields)
	if !ok {
		return nil
	}
	out := &Mail{SPF: DefaultSPF}
	if v := m["relay"]; v != nil {
		d.mark(path+".relay", deref(v))
		if s, ok := d.str(v, path+".relay"); ok {
			out.Relay = s
		}
	} else {
		d.add(deref(n).Line, path+".relay", "is required")
	}
	for _, f := range []struct {
		key   string
		dst   *string
		check func(string) string
	}{{"spf", &out.SPF, spfProblem}, {"dmarc", &out.DMARC, dmarcProblem}} {
		v := m[f.key]
		if v == nil {
			continue
		}
		if s, ok := d.str(v, path+"."+f.key); ok {
			if why := mailTextProblem(s, f.check); why != "" {
				d.errAt(deref(v), path+"."+f.key, "%q %s", s, why)
			} else {
				*f.dst = s
			}
		}
	}
	return out
}

// mailTextProblem says what is wrong with the text of a mail TXT record, "" when nothing:
// 1 to 255 characters of printable ASCII (what SPF and DMARC records are), and what check
// says of its content. A value the server would hold otherwise than written would be
// published again by every apply.
func mailTextProblem(s string, check func(string) string) string {
	if s == "" || len(s) > 255 {
		return "must be 1 to 255 characters"
	}
	for i, r := range s {
		if r < ' ' || r > '~' {
			return fmt.Sprintf("must be printable ASCII, not %q (at byte %d)", r, i)
		}
	}
	return check(s)
}

// spfProblem: an SPF record starts with the version section "v=spf1", ended by a space or
// the end of the text (RFC 7208 4.5); another text is no SPF record to a mail receiver.
func spfProblem(s string) string {
	if len(s) >= 6 && strings.EqualFold(s[:6], "v=spf1") && (len(s) == 6 || s[6] == ' ') {
		return ""
	}
	return `is not an SPF record: it must start with "v=spf1" and a space (RFC 7208)`
}

// dmarcProblem: a DMARC record's first tag is v=DMARC1, and it has a policy p= of none,
// quarantine or reject (RFC 7489 6.3, 6.4): a receiver ignores a record without them.
func dmarcProblem(s string) string {
	tags := strings.Split(s, ";")
	kv := func(tag string) (string, string) {
		k, v, _ := strings.Cut(tag, "=")
		return strings.TrimSpace(k), strings.TrimSpace(v)
	}
	if k, v := kv(tags[0]); k != "v" || v != "DMARC1" {
		return `is not a DMARC record: its first tag must be "v=DMARC1" (RFC 7489)`
	}
	for _, tag := range tags[1:] {
		if k, v := kv(tag); k == "p" {
			if slices.Contains([]string{"none", "quarantine", "reject"}, v) {
				return ""
			}
			return fmt.Sprintf("has policy p=%s: it must be none, quarantine or reject (RFC 7489)", v)
		}
	}
	return `has no policy: it needs a tag "p=none", "p=quarantine" or "p=reject" (RFC 7489)`
}

// validatePublish checks what `publish:` says about the nodes: every published name is in the
// zone, the relay is a node with names, and a node with names can get an address.
func (d *decoder) validatePublish(g *Group) {
	p := g.Publish
	if p == nil {
		return
	}
	for _, n := range g.Nodes {
		path := "nodes." + n.Name + ".publishedNames"
		for i, name := range n.PublishedNames {
			if p.Zone != "" && !InZone(name, p.Zone) {
				d.errPath(index(path, i), "name %s is not in the zone %s (publish.zone)", name, p.Zone)
			}
		}
		if AddressModeOf(p, n) == OwnAddress && len(n.Firewall.LoadBalancerPorts()) == 0 {
			d.errPath(path, "a node with published names needs a published port (its Service gets the address the names point at)")
		}
	}
	if p.Mail != nil && p.Mail.Relay != "" {
		switch n := g.Node(p.Mail.Relay); {
		case n == nil:
			d.errPath("publish.mail.relay", "node %s is not in the group", p.Mail.Relay)
		case len(n.PublishedNames) == 0:
			d.errPath("publish.mail.relay", "node %s has no publishedNames (the MX record points at its first)", p.Mail.Relay)
		}
	}
}
