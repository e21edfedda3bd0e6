package spec

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"
)

// Defaults and environment of `publish:` (SPEC §7).
const (
	DefaultAddressTimeout = DefaultRolloutTimeout // 5m, the same patience as a rollout
	DefaultTTL            = 300
	DefaultTSIGAlgorithm  = "hmac-sha256"
	DefaultSPF            = "v=spf1 mx -all"

	EnvGateway        = "K8S_GATEWAY"
	EnvDNSServer      = "SLIPWAY_DNS_SERVER"
	EnvTSIGSecret     = "SLIPWAY_TSIG_SECRET"
	EnvTSIGSecretFile = "SLIPWAY_TSIG_SECRET_FILE"
)

// TSIGAlgorithms are the TSIG algorithms `publish.dns.algorithm` accepts (RFC 8945's HMACs).
var TSIGAlgorithms = []string{"hmac-sha256", "hmac-sha384", "hmac-sha512", "hmac-sha224", "hmac-sha1"}

// Publish is the group file's `publish:` section: with it the group is in the operator form
// and every node with published names is made reachable by them (SPEC §7).
type Publish struct {
	Zone string // a DNS name; every published name is in it or is it
	// Gateway is where nodes behind the Gateway are routed; nil: every node with names keeps
	// its own address. K8S_GATEWAY wins over the file.
	Gateway        *GatewayRef
	AddressTimeout time.Duration // the wait for an address, and for routes to be accepted
	TTL            uint32        // of every record, in seconds
	DNS            DNS
	Mail           *Mail // nil: no mail records
	Line           int   // the line of `publish:` in the group file
}

// GatewayRef names a Gateway API Gateway.
type GatewayRef struct {
	Namespace, Name string
	From            string // where it was set: "K8S_GATEWAY" or "slipway.yaml:12"
}

// String is `<namespace>/<name>`, as the file writes it.
func (r GatewayRef) String() string { return r.Namespace + "/" + r.Name }

// DNS is the server slipway sends RFC 2136 updates to, over TCP, signed with TSIG. The key's
// secret is not here: Secret reads it from the environment when it is needed.
type DNS struct {
	Server    string // host:port; SLIPWAY_DNS_SERVER wins over the file
	Key       string // the TSIG key name, without a trailing dot
	Algorithm string // one of TSIGAlgorithms
}

// Secret reads the TSIG secret (base64, as dnssec-keygen and knotc write it) from
// SLIPWAY_TSIG_SECRET, or else from the file SLIPWAY_TSIG_SECRET_FILE names. An error names
// the variable or the file, never the value.
func (DNS) Secret() (string, error) {
	if v, ok := os.LookupEnv(EnvTSIGSecret); ok && v != "" {
		return checkSecret(v, "environment variable "+EnvTSIGSecret)
	}
	f, ok := os.LookupEnv(EnvTSIGSecretFile)
	if !ok || f == "" {
		return "", fmt.Errorf("tsig secret: neither %s nor %s is set", EnvTSIGSecret, EnvTSIGSecretFile)
	}
	b, err := os.ReadFile(f)
	if err != nil {
		return "", fmt.Errorf("tsig secret: file %s (%s): %w", f, EnvTSIGSecretFile, unwrapPath(err))
	}
	return checkSecret(strings.TrimSpace(string(b)), "file "+f+" ("+EnvTSIGSecretFile+")")
}

var errNotBase64 = errors.New("is not base64")

func checkSecret(v, from string) (string, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return "", fmt.Errorf("tsig secret: %s is empty", from)
	}
	if _, err := base64.StdEncoding.DecodeString(v); err != nil {
		return "", fmt.Errorf("tsig secret: %s: %w", from, errNotBase64)
	}
	return v, nil
}

// Mail is the zone's mail records (FR-020), published after the relay node's rollout.
type Mail struct {
	Relay string // a node with published names; MX points at its first
	SPF   string
	DMARC string // "": no _dmarc record
}

// AddressMode is how a node gets the address its published names point at.
type AddressMode int

const (
	// NotPublished: no `publish:`, or a node without published names; nothing of SPEC §7.
	NotPublished AddressMode = iota
	// BehindGateway: a ClusterIP Service and routes on the Gateway; its address is the Gateway's.
	BehindGateway
	// OwnAddress: the node's LoadBalancer Service and its ingress address.
	OwnAddress
)

func (m AddressMode) String() string {
	switch m {
	case BehindGateway:
		return "behind the Gateway"
	case OwnAddress:
		return "own address"
	}
	return "not published"
}

// AddressModeOf says where node n's address comes from (SPEC §7): behind the Gateway when a
// gateway is set and the node's ports for clients (its published ports; an admin or operator
// port is not for clients) are only TCP 80 and 443, 443 among them; else its own address.
func AddressModeOf(p *Publish, n *Node) AddressMode {
	if p == nil || len(n.PublishedNames) == 0 {
		return NotPublished
	}
	if p.Gateway == nil {
		return OwnAddress
	}
	has443 := false
	for _, port := range n.Firewall.Published {
		if port.Protocol != TCP || (port.Number != 80 && port.Number != 443) {
			return OwnAddress
		}
		has443 = has443 || port.Number == 443
	}
	if !has443 {
		return OwnAddress
	}
	return BehindGateway
}

// AddressModeOf is the package function for a node of g.
func (g *Group) AddressModeOf(n *Node) AddressMode { return AddressModeOf(g.Publish, n) }

// InZone reports whether name (a host name or *.wildcard) is zone or a name under it.
func InZone(name, zone string) bool {
	return name == zone || strings.HasSuffix(name, "."+zone)
}

func parseGatewayRef(s string) (GatewayRef, bool) {
	ns, name, ok := strings.Cut(s, "/")
	if !ok || !isLabel(ns, false) || !isSubdomain(name) {
		return GatewayRef{}, false
	}
	return GatewayRef{Namespace: ns, Name: name}, true
}

// normalServer checks host:port (port 53 when left out) and returns it with the port.
func normalServer(s string) (string, bool) {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		if strings.Contains(s, ":") && !strings.Contains(s, "]") && strings.Count(s, ":") == 1 {
			return "", false
		}
		host, port = strings.Trim(s, "[]"), "53"
	}
	if host == "" {
		return "", false
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return "", false
	}
	if net.ParseIP(host) == nil && !isSubdomain(strings.TrimSuffix(host, ".")) {
		return "", false
	}
	return net.JoinHostPort(host, port), true
}
