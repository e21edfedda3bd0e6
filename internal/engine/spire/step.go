package spire

import (
	"context"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"slipway.dev/slipway/internal/engine/lane"
	"slipway.dev/slipway/internal/event"
	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/spec"
	"slipway.dev/slipway/internal/state"
)

// PodLabels are the nodes' LabelSpirePod values in the plan apply runs (its main
// Deployments), read from the run's objects: the root takes them out of the plan (p.Desired
// is nil by the time a step runs). The lane checks their form before an entry selects them.
func PodLabels(objs lane.Objects) (map[string]string, error) {
	out := map[string]string{}
	for _, k := range objs.KeysOf("Deployment") {
		d := objs.Get(k)
		if d == nil {
			continue
		}
		if plan.IsStub(d) {
			return nil, fmt.Errorf("%s: the plan holds a stub of it and not the object", k)
		}
		labels, _, _ := unstructured.NestedStringMap(d.Object, "spec", "template", "metadata", "labels")
		if v := labels[spec.LabelSpirePod]; v != "" && labels[spec.LabelRole] == "" {
			out[labels[spec.LabelNode]] = v
		}
	}
	return out, nil
}

// applyStep runs a spire step: what the state records of another place retired, then the
// server and the spire node made ready before any node, the record written before. The
// step's changes are never run as they are (a saved plan is a file anyone may edit): the
// lane plans again from the validated group file and the state, and refuses when they differ.
func (h *Hooks) applyStep(ctx context.Context, nr *lane.NodeRun, st plan.Step) error {
	t := nr.Target
	var recs []state.SpireRecord
	nr.Rec.View(func(d *state.Document) { recs = retiredPlaces(d, t) })
	rs, doneRetire, err := h.planRetirements(ctx, t, recs, t.Group.Spire != nil)
	if err != nil {
		return err
	}
	defer doneRetire()
	now := retiredChanges(rs)
	sl, done, err := h.open(ctx, t)
	if err != nil {
		return err
	}
	defer done()
	var planned *Planned
	var rights []plan.SpireChange
	switch {
	case sl != nil:
		if sl.PodLabels, err = PodLabels(nr.Objects); err != nil {
			return fmt.Errorf("group %s: spire: %w", t.Group.Name, err)
		}
		if planned, err = sl.Plan(ctx); err != nil {
			return fmt.Errorf("group %s: %w", t.Group.Name, err)
		}
		now = append(now, planned.Changes...)
	case len(recs) == 0:
		// A deployment the state records no place of (applied before slipway recorded
		// them): its rights alone are found again.
		if rights, err = h.rightsLeftovers(ctx, t); err != nil {
			return err
		}
		now = append(now, rights...)
	}
	saved, _ := st.Payload.(plan.SpireChanges)
	if err := CheckSaved(saved, now); err != nil {
		return fmt.Errorf("group %s: %w", t.Group.Name, err)
	}
	h.env.Emit(event.Event{Phase: event.PhaseApply, Message: st.String()})
	if err := h.retire(ctx, t, rs, nr.Rec); err != nil {
		return err
	}
	if sl == nil {
		return h.retireRights(ctx, t, rights)
	}
	if err := recordPlace(ctx, nr.Rec, t); err != nil {
		return err
	}
	if err := sl.Apply(ctx, planned.Changes); err != nil {
		return fmt.Errorf("group %s: %w", t.Group.Name, err)
	}
	return nil
}

// recordPlace writes t's record before its lane makes anything (a record of the same place
// is replaced by it); nothing when the state holds it already.
func recordPlace(ctx context.Context, rec lane.Recorder, t lane.Target) error {
	want := placeOf(t)
	var has bool
	rec.View(func(d *state.Document) { has = slices.Contains(d.Spire, want) })
	if has {
		return nil
	}
	return rec.Update(ctx, "before the SPIRE lane makes its parts", func(d *state.Document) {
		d.Spire = slices.DeleteFunc(d.Spire, func(x state.SpireRecord) bool { return x.Place() == want.Place() })
		d.Spire = append(d.Spire, want)
	})
}
