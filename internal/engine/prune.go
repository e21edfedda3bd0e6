package engine

import (
	"context"
	"fmt"

	"slipway.dev/slipway/internal/event"
	"slipway.dev/slipway/internal/plan"
)

// prune runs a prune step: the objects that left a node (a role removed, say).
func (e *Engine) prune(ctx context.Context, r *run, st plan.Step) error {
	e.emit(event.Event{Node: st.Node, Phase: event.PhasePrune, Message: fmt.Sprintf("removing %d objects that left the group", len(st.Objects))})
	return e.deleteAll(ctx, changesOf(r, st.Objects))
}

// removeNode runs a remove-node step: every object of a node that left the group, its claim
// included, then its state.
func (e *Engine) removeNode(ctx context.Context, r *run, st plan.Step) error {
	e.emit(event.Event{Node: st.Node, Phase: event.PhasePrune, Message: fmt.Sprintf("removing %d objects of a node that left the group", len(st.Objects))})
	if err := e.deleteAll(ctx, changesOf(r, st.Objects)); err != nil {
		return err
	}
	if err := r.rec.removed(ctx, st.Node); err != nil {
		return err
	}
	e.emit(event.Event{Node: st.Node, Phase: event.PhaseDone, Message: "removed"})
	return nil
}
