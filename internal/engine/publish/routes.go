package publish

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"slipway.dev/slipway/internal/engine/lane"
	"slipway.dev/slipway/internal/event"
	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/quote"
	"slipway.dev/slipway/internal/spec"
)

// The route conditions the address lane waits for (SPEC §7).
const (
	condAccepted     = string(gwv1.RouteConditionAccepted)
	condResolvedRefs = string(gwv1.RouteConditionResolvedRefs)
)

// awaitAccepted waits, before the node's rollout, until the Gateway's controller accepts each
// of the node's routes at the route's current generation; a route it rejects fails the node
// at once, with the condition's reason. It runs an await-accepted step.
func (l *Lane) awaitAccepted(ctx context.Context, nr *lane.NodeRun, st plan.Step) error {
	return l.awaitRoutes(ctx, nr, st, condAccepted)
}

// awaitResolved waits, after the rollout, until each route's references resolve: a controller
// may hold a backend without a ready endpoint as unresolved until the pod is Ready, so a
// False here is waited out until the limit. It runs an await-resolved step.
func (l *Lane) awaitResolved(ctx context.Context, nr *lane.NodeRun, st plan.Step) error {
	return l.awaitRoutes(ctx, nr, st, condResolvedRefs)
}

func (l *Lane) awaitRoutes(ctx context.Context, nr *lane.NodeRun, st plan.Step, cond string) error {
	ref := nr.Target.Group.Publish.Gateway
	gw, class, err := l.kube.Gateway(ctx, ref.Namespace, ref.Name)
	switch {
	case err != nil:
		return err
	case gw == nil:
		return fmt.Errorf("gateway %s (%s): does not exist", ref, ref.From)
	case class == nil:
		return fmt.Errorf("gateway %s (%s): its GatewayClass %s does not exist", ref, ref.From, gw.Spec.GatewayClassName)
	}
	lane.Set(&nr.Slots, addressKey, gatewayAddresses(gw))
	l.env.Emit(event.Event{Node: st.Node, Phase: event.PhaseApply, Message: fmt.Sprintf("waiting for %s %s on gateway %s", keyNames(st.Objects), cond, ref)})
	wctx, cancel := context.WithTimeout(ctx, st.Limit)
	defer cancel()
	w := routeWait{gateway: *ref, controller: string(class.Spec.ControllerName), cond: cond, failFast: cond == condAccepted}
	for _, k := range st.Objects {
		w.last = "no status from its controller " + w.controller
		err := l.kube.WaitRoute(wctx, k, func(gen int64, rs gwv1.RouteStatus) (bool, error) {
			return w.check(k, gen, rs)
		})
		switch {
		case err == nil:
		case ctx.Err() != nil:
			return fmt.Errorf("interrupted while waiting for %s %s to be %s: %w", k.Kind, k.Name, cond, ctx.Err())
		case errors.Is(err, context.DeadlineExceeded):
			return fmt.Errorf("%s %s/%s: not %s by gateway %s within %s: %s", k.Kind, k.Namespace, k.Name, w.verb(), ref, st.Limit, w.last)
		default:
			return err
		}
	}
	return nil
}

// routeWait judges a route's status for one condition.
type routeWait struct {
	gateway    spec.GatewayRef
	controller string
	cond       string
	failFast   bool   // a False at the current generation is final
	last       string // what the last status said, for a timeout's message
}

func (w *routeWait) verb() string {
	if w.cond == condAccepted {
		return "Accepted"
	}
	return "resolved (" + condResolvedRefs + ")"
}

// check finds the parent entry the Gateway's controller wrote for the Gateway and reads the
// condition there at the route's current generation; an entry of an older generation says
// nothing about the route as it is now.
func (w *routeWait) check(k plan.Key, gen int64, rs gwv1.RouteStatus) (bool, error) {
	var entry *gwv1.RouteParentStatus
	for i, p := range rs.Parents {
		if string(p.ControllerName) == w.controller && w.isGateway(p.ParentRef, k.Namespace) {
			entry = &rs.Parents[i]
			break
		}
	}
	if entry == nil {
		w.last = "no status from its controller " + w.controller
		return false, nil
	}
	c := meta.FindStatusCondition(entry.Conditions, w.cond)
	switch {
	case c == nil:
		w.last = "its controller has not set " + w.cond
		return false, nil
	case c.ObservedGeneration != gen:
		w.last = fmt.Sprintf("its controller's %s is of generation %d, the route is at %d", w.cond, c.ObservedGeneration, gen)
		return false, nil
	case c.Status == metav1.ConditionTrue:
		return true, nil
	}
	w.last = conditionText(c)
	if w.failFast && c.Status == metav1.ConditionFalse {
		return true, fmt.Errorf("%s %s/%s: not %s by gateway %s: %s", k.Kind, k.Namespace, k.Name, w.verb(), w.gateway, w.last)
	}
	return false, nil
}

func (w *routeWait) isGateway(p gwv1.ParentReference, routeNS string) bool {
	ns := routeNS
	if p.Namespace != nil {
		ns = string(*p.Namespace)
	}
	return string(p.Name) == w.gateway.Name && ns == w.gateway.Namespace &&
		(p.Kind == nil || *p.Kind == "Gateway")
}

// conditionText is `Accepted is False (NotAllowedByListeners: message)`.
func conditionText(c *metav1.Condition) string {
	s := fmt.Sprintf("%s is %s (%s", quote.Line(c.Type), quote.Line(string(c.Status)), quote.Line(c.Reason))
	if m := quote.Line(strings.TrimSpace(c.Message)); m != "" {
		s += ": " + m
	}
	return s + ")"
}

// keyNames lists objects as "Kind name, Kind name".
func keyNames(ks []plan.Key) string {
	parts := make([]string, len(ks))
	for i, k := range ks {
		parts[i] = k.Kind + " " + k.Name
	}
	return strings.Join(parts, ", ")
}
