// Package netaddr answers what slipway asks of a network address without reaching it: whether
// it is on this machine. It imports no slipway package, so that image (plain HTTP to a
// registry) and kube (compression from an API server) ask the same question the same way.
package netaddr

import (
	"net"
	"strings"
)

// Loopback reports whether host (no port; an IPv6 address bare or in brackets) is on this
// machine: localhost, *.localhost (RFC 6761), 127.0.0.0/8 or ::1.
func Loopback(host string) bool {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}
