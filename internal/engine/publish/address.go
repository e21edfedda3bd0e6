package publish

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"slipway.dev/slipway/internal/engine/lane"
	"slipway.dev/slipway/internal/event"
	"slipway.dev/slipway/internal/kube"
	"slipway.dev/slipway/internal/plan"
)

// awaitAddress waits, within the step's limit (publish.addressTimeout), for the load-balancer
// address of a node's Service, before the node's rollout (SPEC §7): a node whose names
// would point nowhere is not rolled out. The address is handed on to the node's later steps.
//
// It runs an await-address step.
func (l *Lane) awaitAddress(ctx context.Context, nr *lane.NodeRun, st plan.Step) error {
	k := *st.Object
	l.env.Emit(event.Event{Node: st.Node, Phase: event.PhaseApply, Message: "waiting for the load-balancer address of service " + k.Name})
	wctx, cancel := context.WithTimeout(ctx, st.Limit)
	defer cancel()
	var addr []string
	err := l.kube.WaitService(wctx, k.Namespace, k.Name, func(s *corev1.Service) bool {
		addr = kube.IngressOf(s)
		return len(addr) > 0
	})
	switch {
	case err == nil:
		lane.Set(&nr.Slots, addressKey, addr)
		return nil
	case ctx.Err() != nil:
		return fmt.Errorf("interrupted while waiting for the load-balancer address of service %s: %w", k.Name, ctx.Err())
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("service %s/%s: no load-balancer address within %s (status.loadBalancer.ingress is empty): not rolled out", k.Namespace, k.Name, st.Limit)
	}
	return fmt.Errorf("waiting for the load-balancer address of service %s: %w", k.Name, err)
}
