package central

import (
	"context"
	"fmt"
	"slices"

	"slipway.dev/slipway/internal/engine/lane"
	"slipway.dev/slipway/internal/event"
	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/spec"
	"slipway.dev/slipway/internal/state"
)

// Hooks is the central lane as the engine runs it (internal/engine/lane): where Lane is one
// deployment's objects against the servers, Hooks opens the Lane at each place of a verb: its
// plan, its steps before and after the nodes, its part of destroy after the nodes are gone.
// The state records that the lane made objects (a state.CentralRecord: the mounts and the
// protected databases and buckets, written before it makes any): a file without `central:` then gets the
// recorded lane, whose plan removes what the deployment's mark is on (PlanRetire), and destroy
// finds them too. The record is dropped once they are gone.
type Hooks struct{ env lane.Env }

// New returns the lane's hooks.
func New(env lane.Env) *Hooks { return &Hooks{env: env} }

// Name names the lane.
func (h *Hooks) Name() string { return "central" }

// Executors are the lane's step, run before the nodes (what they use is made) and after them
// (what they no longer use goes).
func (h *Hooks) Executors() map[plan.StepKind]lane.Executor {
	return map[plan.StepKind]lane.Executor{plan.StepCentral: h.applyStep}
}

// open is the lane of t: the file's, or without `central:` the one doc records; nil when
// neither. A record of other mounts than the file's stops a plan (what is in the old mounts
// would be left, a generated value made again); destroy takes the record's, where the
// objects are. done closes its connections.
func (h *Hooks) open(ctx context.Context, t lane.Target, doc *state.Document, destroy bool) (*Lane, func(), error) {
	var rec *spec.Central
	if doc != nil && doc.Central != nil {
		r := doc.Central
		var err error
		if rec, err = Recorded(r.DatabaseMount, r.Connection, r.KVMount, r.Protected, r.ProtectedBuckets); err != nil {
			return nil, nil, fmt.Errorf("group %s: %w", t.Group.Name, err)
		}
	}
	c := t.Group.Central
	switch {
	case c == nil && rec == nil:
		return nil, func() {}, nil
	case c == nil:
		c = rec
	case rec != nil && !SameMounts(c, rec) && destroy:
		cc := *c
		cc.DatabaseMount, cc.Connection, cc.KVMount = rec.DatabaseMount, rec.Connection, rec.KVMount
		c = &cc
	case rec != nil && !SameMounts(c, rec):
		return nil, nil, fmt.Errorf("group %s: central.openbao: the state records the deployment's objects under database mount %s, connection %s and KV mount %s, the file names %s, %s and %s: slipway does not move them (a generated value would be made anew); put the old names back, or remove central: and apply (which removes the objects) before naming new ones",
			t.Group.Name, rec.DatabaseMount, rec.Connection, rec.KVMount, c.DatabaseMount, c.Connection, c.KVMount)
	}
	pg, bao, err := Connect(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("group %s: %w", t.Group.Name, err)
	}
	cl := &Lane{Central: c, Recorded: rec, Identity: t.Group.Name, PG: pg, Bao: bao,
		Value: Value, Random: Random}
	// A bucket the state records protected is judged on the server even when the file has no
	// central.s3 any more.
	if err := cl.ConnectS3(c.S3 != nil || (rec != nil && rec.S3 != nil)); err != nil {
		pg.Close()
		return nil, nil, fmt.Errorf("group %s: %w", t.Group.Name, err)
	}
	return cl, pg.Close, nil
}

// Amend puts the lane's changes and notes into p.
func (h *Hooks) Amend(ctx context.Context, pr *lane.PlanRun, p *plan.Plan) error {
	t := pr.Target
	cl, done, err := h.open(ctx, t, pr.Doc, false)
	if err != nil || cl == nil {
		return err
	}
	defer done()
	var cp *Planned
	if t.Group.Central != nil {
		cp, err = cl.Plan(ctx, t.KeepClaims)
	} else {
		cp, err = cl.PlanRetire(ctx, t.KeepClaims)
	}
	if err != nil {
		return fmt.Errorf("group %s: %w", t.Group.Name, err)
	}
	p.Central, p.Notes = cp.Changes, append(p.Notes, cp.Notes...)
	return nil
}

// applyStep runs a central step: with the file's lane, the state's record written before
// anything is made; with the recorded lane (no `central:`), the record dropped once its
// objects are gone (kept with --keep-claims, which keeps the databases).
func (h *Hooks) applyStep(ctx context.Context, nr *lane.NodeRun, st plan.Step) error {
	t := nr.Target
	doc := &state.Document{}
	nr.Rec.View(func(d *state.Document) { doc.Central = d.Central })
	cl, done, err := h.open(ctx, t, doc, false)
	if err != nil || cl == nil {
		return err
	}
	defer done()
	h.env.Emit(event.Event{Phase: event.PhaseApply, Message: st.String()})
	if t.Group.Central != nil {
		if err := record(ctx, nr.Rec, t.Group.Central, t.KeepClaims); err != nil {
			return err
		}
	}
	cs, _ := st.Payload.(plan.CentralChanges)
	if err := cl.Apply(ctx, cs); err != nil {
		return fmt.Errorf("group %s: %w", t.Group.Name, err)
	}
	if t.Group.Central == nil && !t.KeepClaims {
		return nr.Rec.Update(ctx, "after the central objects were removed", func(d *state.Document) { d.Central = nil })
	}
	return nil
}

// record writes the record of the file's lane c before it makes anything; nothing when the
// state holds it already. keepClaims keeps the protect of a database or bucket the file no
// longer has: --keep-claims keeps the object itself, and a record without its protect would
// let the next apply without --keep-claims delete what the operator protected.
func record(ctx context.Context, rec lane.Recorder, c *spec.Central, keepClaims bool) error {
	want := &state.CentralRecord{DatabaseMount: c.DatabaseMount, Connection: c.Connection, KVMount: c.KVMount,
		Protected: ProtectedKeys(c), ProtectedBuckets: ProtectedBucketKeys(c)}
	var have *state.CentralRecord
	rec.View(func(d *state.Document) { have = d.Central })
	if have != nil && keepClaims {
		want.Protected = keptProtected(want.Protected, have.Protected, func(k string) bool {
			return slices.ContainsFunc(c.Databases, func(db spec.CentralDatabase) bool { return db.Key == k })
		})
		want.ProtectedBuckets = keptProtected(want.ProtectedBuckets, have.ProtectedBuckets, func(k string) bool {
			return c.S3 != nil && slices.ContainsFunc(c.S3.Buckets, func(b spec.CentralBucket) bool { return b.Key == k })
		})
	}
	if have != nil && have.DatabaseMount == want.DatabaseMount && have.Connection == want.Connection &&
		have.KVMount == want.KVMount && slices.Equal(have.Protected, want.Protected) &&
		slices.Equal(have.ProtectedBuckets, want.ProtectedBuckets) {
		return nil
	}
	return rec.Update(ctx, "before the central lane makes its objects", func(d *state.Document) { d.Central = want })
}

// keptProtected is the file's protected keys and the recorded ones the file no longer names
// (inFile false), sorted: the file decides for the keys it has (unsetting protect lifts it).
func keptProtected(file, recorded []string, inFile func(key string) bool) []string {
	out := slices.Clone(file)
	for _, k := range recorded {
		if !inFile(k) && !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// PlanDestroy is what destroy removes of the lane, into p; a protected database refuses it.
func (h *Hooks) PlanDestroy(ctx context.Context, t lane.Target, doc *state.Document, p *plan.Plan) error {
	cl, done, err := h.open(ctx, t, doc, true)
	if err != nil || cl == nil {
		return err
	}
	defer done()
	cp, err := cl.PlanDestroy(ctx, t.KeepClaims)
	if err != nil {
		return fmt.Errorf("group %s: %w", t.Group.Name, err)
	}
	p.Central, p.Notes = cp.Changes, append(p.Notes, cp.Notes...)
	return nil
}

// DestroyLate judges the lane's part of destroy before anything is removed (a protected
// database refuses it) and returns what removes it once the nodes are gone.
func (h *Hooks) DestroyLate(ctx context.Context, t lane.Target, doc *state.Document) (func() error, error) {
	cl, done, err := h.open(ctx, t, doc, true)
	if err != nil || cl == nil {
		return func() error { return nil }, err
	}
	cp, err := cl.PlanDestroy(ctx, t.KeepClaims)
	done()
	if err != nil {
		return nil, fmt.Errorf("group %s: %w", t.Group.Name, err)
	}
	for _, n := range cp.Notes {
		h.env.Emit(event.Event{Phase: event.PhaseDestroy, Message: n})
	}
	return func() error {
		if len(cp.Changes) == 0 {
			return nil
		}
		cl, done, err := h.open(ctx, t, doc, true)
		if err != nil {
			return err
		}
		defer done()
		h.env.Emit(event.Event{Phase: event.PhaseDestroy, Message: fmt.Sprintf("central: remove %d object(s) of deployment %s", len(cp.Changes), t.Group.Name)})
		if err := cl.Apply(ctx, cp.Changes); err != nil {
			return fmt.Errorf("group %s: %w", t.Group.Name, err)
		}
		return nil
	}, nil
}

var (
	_ lane.Stepper        = (*Hooks)(nil)
	_ lane.Amender        = (*Hooks)(nil)
	_ lane.DestroyPlanner = (*Hooks)(nil)
	_ lane.LateDestroyer  = (*Hooks)(nil)
)
