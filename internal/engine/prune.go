package engine

import (
	"context"
	"fmt"

	"slipway.dev/slipway/internal/event"
	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/state"
)

// claimKept records that node's objects are gone but its claim (apply --keep-claims): its
// record stays, cut to what reattaches the claim.
func (r *recorder) claimKept(ctx context.Context, node string) error {
	return r.Update(ctx, "after removing node "+node+" but its claim", func(d *state.Document) {
		if ns := d.Nodes[node]; ns != nil {
			d.Nodes[node] = keptRecord(ns)
		}
	})
}

// keptRecord is the record of a node whose claim stays without it (destroy --keep-claims,
// apply --keep-claims): its machine ID, its protection and what it knows of the volume (the
// version its data ran ready with, the copy it holds), so that a later apply reattaches the
// claim to a node with the same machine ID, still protected.
func keptRecord(ns *state.NodeState) *state.NodeState {
	return &state.NodeState{MachineID: ns.MachineID, Protect: ns.Protect, StateVersion: ns.StateVersion, Copy: ns.Copy}
}

// keptNotes say which claims of removed nodes the plan keeps.
func keptNotes(p *plan.Plan) []string {
	var notes []string
	for _, np := range p.Nodes {
		for _, k := range np.KeptClaims {
			notes = append(notes, fmt.Sprintf("node %s: its claim %s/%s stays (--keep-claims), and so does its state record: an apply that brings the node back reattaches it; an apply without --keep-claims deletes it", np.Node, k.Namespace, k.Name))
		}
	}
	return notes
}

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
	if r.p.Kept(st.Node) {
		if err := r.rec.claimKept(ctx, st.Node); err != nil {
			return err
		}
		e.emit(event.Event{Node: st.Node, Phase: event.PhaseDone, Message: "removed but its claim, which stays (--keep-claims)"})
		return nil
	}
	if err := r.rec.removed(ctx, st.Node); err != nil {
		return err
	}
	e.emit(event.Event{Node: st.Node, Phase: event.PhaseDone, Message: "removed"})
	return nil
}
