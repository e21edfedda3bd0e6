package lane

import (
	"strings"

	"slipway.dev/slipway/internal/kube"
	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/spec"
	"slipway.dev/slipway/internal/state"
)

// Helpers the root and more than one lane share.

// GroupSelector selects the objects of group: every list of a group's objects asks with it, so
// SharedReads knows such a list by its selector.
func GroupSelector(group string) string { return spec.LabelGroup + "=" + group }

// DeleteOrder orders objects for deletion, against apply order (kube.ManagedKinds): what runs
// before what it uses (Deployments before their Services, claims and accounts), the namespace
// last; by name within a kind. destroy deletes, and plan -destroy shows, in this order.
func DeleteOrder(a, b plan.Key) int {
	rank := func(kind string) int {
		for i, gvk := range kube.ManagedKinds {
			if gvk.Kind == kind {
				return len(kube.ManagedKinds) - i
			}
		}
		return len(kube.ManagedKinds) + 1
	}
	if d := rank(a.Kind) - rank(b.Kind); d != 0 {
		return d
	}
	return strings.Compare(a.Name, b.Name)
}

// ProtectedNodes are the nodes whose claim plan and destroy must not delete (SPEC §6a): a
// node of the file as the file says (so removing protect and applying is how to lift it), a
// node that left the file as the state last recorded it.
func ProtectedNodes(g *spec.Group, doc *state.Document) map[string]bool {
	out := map[string]bool{}
	if doc != nil {
		for name, ns := range doc.Nodes {
			if ns != nil && ns.Protect && g.Node(name) == nil {
				out[name] = true
			}
		}
	}
	for _, n := range g.Nodes {
		if n.State.Protect {
			out[n.Name] = true
		}
	}
	return out
}
