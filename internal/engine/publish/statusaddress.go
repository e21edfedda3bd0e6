package publish

import (
	"context"

	"slipway.dev/slipway/internal/engine/lane"
	"slipway.dev/slipway/internal/spec"
	"slipway.dev/slipway/internal/status"
)

// Addresses adds to gs each published node's names and the address they point at
// (SPEC §7): the Gateway's, read once, for the nodes behind it; else the node's Service's
// load-balancer ingress. Without `publish:` it reads nothing.
func (l *Lane) Addresses(ctx context.Context, t lane.Target, gs *status.Group) error {
	pub := t.Group.Publish
	if pub == nil {
		return nil
	}
	var gateway []string
	gatewayRead := false
	for i := range gs.Nodes {
		ns := &gs.Nodes[i]
		n := t.Group.Node(ns.Node)
		if n == nil || len(n.PublishedNames) == 0 {
			continue
		}
		ns.Names = n.PublishedNames
		if t.Group.AddressModeOf(n) != spec.BehindGateway {
			addr, err := l.kube.ServiceIngress(ctx, t.Namespace, n.Name)
			if err != nil {
				return err
			}
			ns.Address = addr
			continue
		}
		if !gatewayRead {
			gw, _, err := l.kube.Gateway(ctx, pub.Gateway.Namespace, pub.Gateway.Name)
			if err != nil {
				return err
			}
			gateway, gatewayRead = gatewayAddresses(gw), true
		}
		ns.Address = gateway
	}
	return nil
}
