package spire

import (
	"context"
	"fmt"
	"slices"

	"slipway.dev/slipway/internal/engine/lane"
	"slipway.dev/slipway/internal/event"
	"slipway.dev/slipway/internal/kube"
	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/state"
)

// teardownParts is what destroy retires of the lane: what the state records (every place but
// the file's), the file's lane, and without either the rights found again.
type teardownParts struct {
	rs     []retirement
	lane   *Lane
	cs     []plan.SpireChange // the file's lane's
	rights []plan.SpireChange
	done   func()
}

func (d *teardownParts) changes() []plan.SpireChange {
	return append(append(retiredChanges(d.rs), d.cs...), d.rights...)
}

// teardown opens what destroy retires of the lane of t; doc is its state.
func (h *Hooks) teardown(ctx context.Context, t lane.Target, doc *state.Document) (*teardownParts, error) {
	recs := retiredPlaces(doc, t)
	sl, done, err := h.open(ctx, t)
	if err != nil {
		return nil, err
	}
	d := &teardownParts{lane: sl, done: done}
	if sl != nil {
		if d.cs, err = sl.PlanDestroy(ctx); err != nil {
			done()
			return nil, fmt.Errorf("group %s: %w", t.Group.Name, err)
		}
	}
	rs, doneRetire, err := h.planRetirements(ctx, t, recs, sl != nil)
	if err != nil {
		done()
		return nil, err
	}
	d.rs, d.done = rs, func() { doneRetire(); done() }
	if sl == nil && len(recs) == 0 {
		if d.rights, err = h.rightsLeftovers(ctx, t); err != nil {
			d.done()
			return nil, err
		}
	}
	return d, nil
}

// destroy retires the deployment's entries, its allow lists and kubeconfigs on the spire nodes
// and the token-review account's rights: where the file's `spire:` made them and where the
// state (doc) records it made them before.
func (h *Hooks) destroy(ctx context.Context, t lane.Target, doc *state.Document) error {
	d, err := h.teardown(ctx, t, doc)
	if err != nil {
		return err
	}
	defer d.done()
	cs := d.changes()
	if len(cs) == 0 {
		return nil
	}
	h.env.Emit(event.Event{Phase: event.PhaseDestroy, Message: fmt.Sprintf("spire: retire %d change(s)", len(cs))})
	if err := h.retire(ctx, t, d.rs, nil); err != nil {
		return err
	}
	if d.lane != nil {
		if err := d.lane.Apply(ctx, d.cs); err != nil {
			return fmt.Errorf("group %s: %w", t.Group.Name, err)
		}
		return nil
	}
	return h.retireRights(ctx, t, d.rights)
}

// leftovers is what a plan retires of the lane when the file has no `spire:`: what the state
// (doc) records of it (retiredPlaces), or, when it records nothing (a deployment applied
// before slipway recorded it), the rights alone, found again.
func (h *Hooks) leftovers(ctx context.Context, t lane.Target, doc *state.Document) ([]plan.SpireChange, error) {
	if t.Group.Spire != nil {
		return nil, nil
	}
	if recs := retiredPlaces(doc, t); len(recs) > 0 {
		rs, done, err := h.planRetirements(ctx, t, recs, false)
		if err != nil {
			return nil, err
		}
		defer done()
		return retiredChanges(rs), nil
	}
	return h.rightsLeftovers(ctx, t)
}

// rightsLeftovers are the deployment's token-review rights (ClusterRole and binding
// slipway:spire-server:<deployment>, labelled with it) when its file has no `spire:` and
// the state records no place of its lane: its account goes with the lane, and whoever made
// an account of that name in the namespace would hold the rights.
func (h *Hooks) rightsLeftovers(ctx context.Context, t lane.Target) ([]plan.SpireChange, error) {
	if t.Group.Spire != nil {
		return nil, nil
	}
	kc, ok := h.cluster()
	if !ok {
		return nil, nil
	}
	st, err := kc.SpireRBAC(ctx, t.Namespace, t.Group.Name)
	if err != nil {
		return nil, fmt.Errorf("group %s: spire: %w", t.Group.Name, err)
	}
	var out []plan.SpireChange
	name := kube.SpireRBACName(t.Group.Name)
	for _, x := range []struct {
		what  plan.SpireWhat
		state string
	}{{plan.SpireClusterRole, st.Role}, {plan.SpireRoleBinding, st.Binding}} {
		if x.state != "missing" && x.state != kube.RBACForeign {
			out = append(out, plan.SpireChange{What: x.what, Name: name, Action: plan.Delete,
				Reason: "the file has no spire: any more"})
		}
	}
	return out, nil
}

// retireRights deletes the rights when cs (found again now, never read from a plan file)
// name any.
func (h *Hooks) retireRights(ctx context.Context, t lane.Target, cs []plan.SpireChange) error {
	if !slices.ContainsFunc(cs, isRights) {
		return nil
	}
	kc, _ := h.cluster()
	if err := kc.DeleteSpireRBAC(ctx, t.Group.Name); err != nil {
		return fmt.Errorf("group %s: spire: %w", t.Group.Name, err)
	}
	return nil
}
