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

// movedAddress are a node's steps before its roles stop: its objects applied (keys), the
// copy removed (removed) and the address lane's waits (before); and the address records
// published among them. When the node's Service `<node>` is replaced (it moves between the
// Gateway and an address of its own, say) the address its names point at is given back, for
// the cluster to hand to someone else: its names move before the rollout, not after it, so
// that a rollout that fails leaves them pointing at what runs (issue 35 item 2). Make before
// break: a node moving behind the Gateway has its routes Accepted and its names on the
// Gateway's address before its LoadBalancer Service goes; a node with an address of its own
// has its names on its Service's new address as soon as it has one.
func movedAddress(p *Plan, g *spec.Group, n *spec.Node, np *NodePlan, keys []Key, removed, before []Step) ([]Step, []RecordChange) {
	objects := func(ks []Key) []Step {
		if len(ks) == 0 {
			return nil
		}
		return []Step{{Kind: StepApplyObjects, Node: n.Name, Objects: ks}}
	}
	svc := Key{Kind: "Service", Namespace: p.Namespace, Name: n.Name}
	replaced := slices.ContainsFunc(np.Changes, func(c Change) bool { return c.Key == svc && c.Action == Replace })
	early := recordsWhere(np.Records, func(r RecordChange) bool {
		return r.Kind == "address" && (r.Action == Create || r.Action == Update)
	})
	if !replaced || len(early) == 0 || len(before) == 0 {
		return slices.Concat(objects(keys), removed, before), nil
	}
	publish := []Step{{Kind: StepPublishDNS, Node: n.Name, Payload: DNSPublish{early}}}
	if g.AddressModeOf(n) != spec.BehindGateway {
		return slices.Concat(objects(keys), removed, before, publish), early
	}
	rest := slices.DeleteFunc(slices.Clone(keys), func(k Key) bool { return k == svc })
	return slices.Concat(objects(rest), removed, before, publish, objects([]Key{svc})), early
}
