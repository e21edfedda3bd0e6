package engine

import (
	"context"
	"fmt"
	"slices"

	"slipway.dev/slipway/internal/engine/central"
	"slipway.dev/slipway/internal/event"
	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/spec"
	"slipway.dev/slipway/internal/state"
)

// The central lane's hooks (internal/engine/central, issue 44): its plan, its steps before
// and after the nodes, its part of destroy after the nodes are gone. The state records that
// the lane made objects (a state.CentralRecord: the mounts and the protected databases,
// written before it makes any): a file without `central:` then gets the recorded lane, whose
// plan removes what the deployment's mark is on (central.Lane.PlanRetire), and destroy finds
// them too. The record is dropped once they are gone.

// centralLane is the lane of t: the file's, or without `central:` the one doc records; nil
// when neither. A record of other mounts than the file's stops a plan (what is in the old
// mounts would be left, a generated value made again); destroy takes the record's, where the
// objects are. done closes its connections.
func (e *Engine) centralLane(ctx context.Context, t Target, doc *state.Document, destroy bool) (*central.Lane, func(), error) {
	var rec *spec.Central
	if doc != nil && doc.Central != nil {
		r := doc.Central
		var err error
		if rec, err = central.Recorded(r.DatabaseMount, r.Connection, r.KVMount, r.Protected); err != nil {
			return nil, nil, fmt.Errorf("group %s: %w", t.Group.Name, err)
		}
	}
	c := t.Group.Central
	switch {
	case c == nil && rec == nil:
		return nil, func() {}, nil
	case c == nil:
		c = rec
	case rec != nil && !central.SameMounts(c, rec) && destroy:
		cc := *c
		cc.DatabaseMount, cc.Connection, cc.KVMount = rec.DatabaseMount, rec.Connection, rec.KVMount
		c = &cc
	case rec != nil && !central.SameMounts(c, rec):
		return nil, nil, fmt.Errorf("group %s: central.openbao: the state records the deployment's objects under database mount %s, connection %s and KV mount %s, the file names %s, %s and %s: slipway does not move them (a generated value would be made anew); put the old names back, or remove central: and apply (which removes the objects) before naming new ones",
			t.Group.Name, rec.DatabaseMount, rec.Connection, rec.KVMount, c.DatabaseMount, c.Connection, c.KVMount)
	}
	pg, bao, err := central.Connect(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("group %s: %w", t.Group.Name, err)
	}
	lane := &central.Lane{Central: c, Recorded: rec, Identity: t.Group.Name, PG: pg, Bao: bao,
		Value: central.Value, Random: central.Random}
	if err := lane.ConnectS3(c.S3 != nil); err != nil {
		pg.Close()
		return nil, nil, fmt.Errorf("group %s: %w", t.Group.Name, err)
	}
	return lane, pg.Close, nil
}

// planCentral puts the lane's changes and notes into p.
func (e *Engine) planCentral(ctx context.Context, t Target, doc *state.Document, p *plan.Plan) error {
	lane, done, err := e.centralLane(ctx, t, doc, false)
	if err != nil || lane == nil {
		return err
	}
	defer done()
	var cp *central.Planned
	if t.Group.Central != nil {
		cp, err = lane.Plan(ctx, t.KeepClaims)
	} else {
		cp, err = lane.PlanRetire(ctx, t.KeepClaims)
	}
	if err != nil {
		return fmt.Errorf("group %s: %w", t.Group.Name, err)
	}
	p.Central, p.Notes = cp.Changes, append(p.Notes, cp.Notes...)
	return nil
}

// applyCentral runs a central step: with the file's lane, the state's record written before
// anything is made; with the recorded lane (no `central:`), the record dropped once its
// objects are gone (kept with --keep-claims, which keeps the databases).
func (e *Engine) applyCentral(ctx context.Context, r *run, st plan.Step) error {
	r.rec.mu.Lock()
	doc := &state.Document{Central: r.rec.doc.Central}
	r.rec.mu.Unlock()
	lane, done, err := e.centralLane(ctx, r.t, doc, false)
	if err != nil || lane == nil {
		return err
	}
	defer done()
	e.emit(event.Event{Phase: event.PhaseApply, Message: st.String()})
	if r.t.Group.Central != nil {
		if err := r.rec.recordCentral(ctx, r.t.Group.Central); err != nil {
			return err
		}
	}
	if err := lane.Apply(ctx, st.Central); err != nil {
		return fmt.Errorf("group %s: %w", r.t.Group.Name, err)
	}
	if r.t.Group.Central == nil && !r.t.KeepClaims {
		return r.rec.Update(ctx, "after the central objects were removed", func(d *state.Document) { d.Central = nil })
	}
	return nil
}

// recordCentral writes the record of the file's lane c before it makes anything; nothing when
// the state holds it already.
func (r *recorder) recordCentral(ctx context.Context, c *spec.Central) error {
	want := &state.CentralRecord{DatabaseMount: c.DatabaseMount, Connection: c.Connection, KVMount: c.KVMount,
		Protected: central.ProtectedKeys(c)}
	r.mu.Lock()
	have := r.doc.Central
	r.mu.Unlock()
	if have != nil && have.DatabaseMount == want.DatabaseMount && have.Connection == want.Connection &&
		have.KVMount == want.KVMount && slices.Equal(have.Protected, want.Protected) {
		return nil
	}
	return r.Update(ctx, "before the central lane makes its objects", func(d *state.Document) { d.Central = want })
}

// planDestroyCentral is what destroy removes of the lane, into p; a protected database
// refuses it.
func (e *Engine) planDestroyCentral(ctx context.Context, t Target, p *plan.Plan, keepClaims bool) error {
	doc, err := readAnyNamespace(ctx, t)
	if err != nil {
		return err
	}
	lane, done, err := e.centralLane(ctx, t, doc, true)
	if err != nil || lane == nil {
		return err
	}
	defer done()
	cp, err := lane.PlanDestroy(ctx, keepClaims)
	if err != nil {
		return fmt.Errorf("group %s: %w", t.Group.Name, err)
	}
	p.Central, p.Notes = cp.Changes, append(p.Notes, cp.Notes...)
	return nil
}

// destroyCentral judges the lane's part of destroy before anything is removed (a protected
// database refuses it) and returns what removes it once the nodes are gone.
func (e *Engine) destroyCentral(ctx context.Context, t Target, keepClaims bool) (func() error, error) {
	doc, err := readAnyNamespace(ctx, t)
	if err != nil {
		return nil, err
	}
	lane, done, err := e.centralLane(ctx, t, doc, true)
	if err != nil || lane == nil {
		return func() error { return nil }, err
	}
	cp, err := lane.PlanDestroy(ctx, keepClaims)
	done()
	if err != nil {
		return nil, fmt.Errorf("group %s: %w", t.Group.Name, err)
	}
	for _, n := range cp.Notes {
		e.emit(event.Event{Phase: event.PhaseDestroy, Message: n})
	}
	return func() error {
		if len(cp.Changes) == 0 {
			return nil
		}
		lane, done, err := e.centralLane(ctx, t, doc, true)
		if err != nil {
			return err
		}
		defer done()
		e.emit(event.Event{Phase: event.PhaseDestroy, Message: fmt.Sprintf("central: remove %d object(s) of deployment %s", len(cp.Changes), t.Group.Name)})
		if err := lane.Apply(ctx, cp.Changes); err != nil {
			return fmt.Errorf("group %s: %w", t.Group.Name, err)
		}
		return nil
	}, nil
}
