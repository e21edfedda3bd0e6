package publish

import (
	"slices"
	"strings"

	"slipway.dev/slipway/internal/dns"
	"slipway.dev/slipway/internal/engine/lane"
	"slipway.dev/slipway/internal/state"
)

// dnsAdopts is the owner of the earlier release's key that it's set may still carry and
// that t takes over (dns.Decide's adopts), "" for none: t adopts that key now (a plan before
// apply), or its state was adopted from it, and the state lists the set (the earlier release
// listed a set before it published it). owner is t's own, `<key>/<namespace>@<cluster UID>`.
func dnsAdopts(t lane.Target, doc *state.Document, it dnsItem, owner string) string {
	key := ""
	switch {
	case t.Adopts != "":
		key = t.Adopts
	case doc != nil && doc.AdoptedFrom != "" && doc.AdoptedFrom == t.Group.Ident().LegacyKey():
		key = doc.AdoptedFrom
	}
	_, uid, ok := strings.Cut(owner, "@")
	if key == "" || !ok || doc == nil {
		return ""
	}
	for _, ns := range doc.Nodes {
		if slices.ContainsFunc(ns.DNS, func(r state.DNSRecord) bool { return r.Name == it.name && r.Kind == string(it.kind) }) {
			return dns.Owner(key, t.Namespace, uid)
		}
	}
	return ""
}
