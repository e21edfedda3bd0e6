package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

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

// changesOf are the plan's changes of keys, in their order.
func changesOf(r *run, keys []plan.Key) []plan.Change {
	var cs []plan.Change
	for _, k := range keys {
		if c := r.change(k); c != nil {
			cs = append(cs, *c)
		}
	}
	return cs
}

// deleteAll deletes changes in reverse apply order: Deployments first, the claim last.
func (e *Engine) deleteAll(ctx context.Context, changes []plan.Change) error {
	order := map[string]int{"PodDisruptionBudget": -1, "Deployment": 0, "Service": 1, "PersistentVolumeClaim": 2, "ServiceAccount": 3, "NetworkPolicy": 4}
	cs := slices.Clone(changes)
	slices.SortStableFunc(cs, func(a, b plan.Change) int { return order[a.Key.Kind] - order[b.Key.Kind] })
	var errs []error
	var deleted []plan.Change
	for _, c := range cs {
		if c.Action == plan.Delete {
			err := e.o.Kube.Delete(context.WithoutCancel(ctx), c.Key, c.UID)
			errs = append(errs, err)
			if err == nil {
				deleted = append(deleted, c)
			}
		}
	}
	// Wait until they are gone (a claim goes only after its pod): a node or role added back
	// right after must get a new claim, not the terminating one.
	for _, c := range deleted {
		if err := e.o.Kube.WaitGone(ctx, c.Key, 2*time.Minute); err != nil {
			errs = append(errs, err)
			break
		}
	}
	return errors.Join(errs...)
}
