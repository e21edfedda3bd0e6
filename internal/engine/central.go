package engine

import (
	"context"
	"fmt"

	"slipway.dev/slipway/internal/engine/central"
	"slipway.dev/slipway/internal/event"
	"slipway.dev/slipway/internal/plan"
)

// The central lane's hooks (internal/engine/central, issue 44): its plan, its steps before
// and after the nodes, its part of destroy after the nodes are gone.

// centralLane is the lane of t, nil without `central:`; done closes its connections.
func (e *Engine) centralLane(ctx context.Context, t Target) (*central.Lane, func(), error) {
	if t.Group.Central == nil {
		return nil, func() {}, nil
	}
	pg, bao, err := central.Connect(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("group %s: %w", t.Group.Name, err)
	}
	return &central.Lane{Central: t.Group.Central, Identity: t.Group.Name, PG: pg, Bao: bao,
		Value: central.Value, Random: central.Random}, pg.Close, nil
}

// planCentral puts the lane's changes and notes into p.
func (e *Engine) planCentral(ctx context.Context, t Target, p *plan.Plan) error {
	lane, done, err := e.centralLane(ctx, t)
	if err != nil || lane == nil {
		return err
	}
	defer done()
	cp, err := lane.Plan(ctx, t.KeepClaims)
	if err != nil {
		return fmt.Errorf("group %s: %w", t.Group.Name, err)
	}
	p.Central, p.Notes = cp.Changes, append(p.Notes, cp.Notes...)
	return nil
}

// applyCentral runs a central step.
func (e *Engine) applyCentral(ctx context.Context, r *run, st plan.Step) error {
	lane, done, err := e.centralLane(ctx, r.t)
	if err != nil || lane == nil {
		return err
	}
	defer done()
	e.emit(event.Event{Phase: event.PhaseApply, Message: st.String()})
	if err := lane.Apply(ctx, st.Central); err != nil {
		return fmt.Errorf("group %s: %w", r.t.Group.Name, err)
	}
	return nil
}

// planDestroyCentral is what destroy removes of the lane, into p; a protected database
// refuses it.
func (e *Engine) planDestroyCentral(ctx context.Context, t Target, p *plan.Plan, keepClaims bool) error {
	lane, done, err := e.centralLane(ctx, t)
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
	p := &plan.Plan{}
	if err := e.planDestroyCentral(ctx, t, p, keepClaims); err != nil {
		return nil, err
	}
	for _, n := range p.Notes {
		e.emit(event.Event{Phase: event.PhaseDestroy, Message: n})
	}
	return func() error {
		if len(p.Central) == 0 {
			return nil
		}
		lane, done, err := e.centralLane(ctx, t)
		if err != nil {
			return err
		}
		defer done()
		e.emit(event.Event{Phase: event.PhaseDestroy, Message: fmt.Sprintf("central: remove %d object(s) of deployment %s", len(p.Central), t.Group.Name)})
		if err := lane.Apply(ctx, p.Central); err != nil {
			return fmt.Errorf("group %s: %w", t.Group.Name, err)
		}
		return nil
	}, nil
}
