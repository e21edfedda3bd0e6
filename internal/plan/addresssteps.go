package plan

import (
	"slices"

	"slipway.dev/slipway/internal/spec"
)

// nodeAddressSteps are the address lane's steps of one node: before its rollout and after it.
type nodeAddressSteps struct{ before, after []Step }

// addressSteps places the address lane (SPEC §7) in a node's steps: a node with its own
// address waits for its Service's load-balancer address before the rollout; a node behind the
// Gateway waits for its routes to be Accepted before it and, unless the group is suspended
// (no pod: nothing to resolve to), for their references to resolve after it. Without
// `publish:` there is nothing to wait for (FR-018).
func addressSteps(p *Plan, g *spec.Group, n *spec.Node) nodeAddressSteps {
	var out nodeAddressSteps
	limit := spec.DefaultAddressTimeout
	if g.Publish != nil {
		limit = g.Publish.AddressTimeout
	}
	switch g.AddressModeOf(n) {
	case spec.OwnAddress:
		k := Key{Kind: "Service", Namespace: p.Namespace, Name: n.Name}
		out.before = []Step{{Kind: StepAwaitAddress, Node: n.Name, Object: &k, Limit: limit}}
	case spec.BehindGateway:
		// The routes render makes: a TLSRoute, and an HTTPRoute when 80 is published.
		routes := []Key{{Kind: "TLSRoute", Namespace: p.Namespace, Name: n.Name}}
		if slices.Contains(n.Firewall.Published, spec.Port{Protocol: spec.TCP, Number: 80}) {
			routes = append(routes, Key{Kind: "HTTPRoute", Namespace: p.Namespace, Name: n.Name})
		}
		out.before = []Step{{Kind: StepAwaitAccepted, Node: n.Name, Objects: routes, Limit: limit}}
		if !p.Suspended {
			out.after = []Step{{Kind: StepAwaitResolved, Node: n.Name, Objects: routes, Limit: limit}}
		}
	}
	return out
}
