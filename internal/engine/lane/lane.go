// Package lane is the engine's contract with its lanes (issue 45): what a lane is (Lane and
// the optional hooks it implements, found by type assertion), what the engine lends it
// instead of itself (Env, Target, Recorder, NodeRun with its per-node slots) and the helpers
// every lane shares (the state read with its namespace check, the waits on a Deployment in the
// apply's watch, what a rollout records and how one is set back). The engine root composes the
// lanes from one list (internal/engine/lanes.go) and calls each hook in that list's order at
// its place in a verb; the order of steps stays in plan.BuildSteps. A lane imports this
// package and the pure core, never another lane nor the engine root.
package lane

import (
	"context"

	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/render"
	"slipway.dev/slipway/internal/state"
	"slipway.dev/slipway/internal/status"
)

// Lane is one lane of the engine: a package that plans, applies, destroys, suspends or
// reports one concern of a deployment (publishing, secrets, …) through the hooks below.
type Lane interface {
	// Name names the lane in errors and docs ("publish").
	Name() string
}

// Executor runs one kind of step for one node (st.Node; "" for a step of the run).
type Executor func(ctx context.Context, nr *NodeRun, st plan.Step) error

// Stepper is a lane with steps: the executor of each of its step kinds. No two lanes run
// the same kind.
type Stepper interface {
	Executors() map[plan.StepKind]Executor
}

// Preparer is a lane's first part of a plan, before the objects are rendered: it reads and
// checks what its Amender needs later (kept in pr's slots) and refuses a plan it cannot go on
// with before anything else is read.
type Preparer interface {
	Prepare(ctx context.Context, pr *PlanRun) error
}

// Renderer is a lane that takes part in render (spire: the cluster's name on its server and
// the server's trust bundle). Render adds the lane's part to in before the objects are
// rendered; Rendered reads the objects render made, before they are compared with the
// cluster (the comparison drops the typed objects it converts).
type Renderer interface {
	Render(ctx context.Context, pr *PlanRun, in *render.Input) error
	Rendered(ctx context.Context, pr *PlanRun, objs []render.Object) error
}

// Inputter is a lane's part of a plan's input, once the objects are rendered and compared
// and before plan.Compute: it fills in what in lacks of the lane's concern (in.Versions holds
// the nodes' state versions render used).
type Inputter interface {
	Input(ctx context.Context, pr *PlanRun, in *plan.Input) error
}

// Amender is a lane's part of a plan, once plan.Compute made it: it adds its changes and
// notes to p, reading what pr holds, and fails the plan when the lane cannot go on.
type Amender interface {
	Amend(ctx context.Context, pr *PlanRun, p *plan.Plan) error
}

// Starter is a lane's start of an apply. Fill runs before anything is read or changed: it
// returns p with what a plan leaves out and the apply needs (the Secrets' values, which stay
// in this run's memory), or p itself, and refuses an apply that cannot go on. Start runs once
// the state is read and checked, before the first change of an apply that changes anything.
type Starter interface {
	Fill(p *plan.Plan, t Target) (*plan.Plan, error)
	Start(ctx context.Context, p *plan.Plan, rec Recorder) error
}

// Finisher is a lane's end of an apply, once every node's steps ran: failed nodes failed
// (the run was interrupted when ctx is done). The engine joins its error to the nodes'.
type Finisher interface {
	Finish(ctx context.Context, p *plan.Plan, rec Recorder, failed int) error
}

// Destroyer is a lane's part of destroy: Refuse runs while destroy reads what it would
// remove (nothing is changed yet), Destroy before the deployment's objects go. doc is the
// state as the root reads it (an earlier release's it adopts included), nil when none.
// Destroy's hooks run in the reverse of the list's order: teardown undoes what the lanes
// made in that order.
type Destroyer interface {
	Refuse(t Target, doc *state.Document) error
	Destroy(ctx context.Context, t Target, doc *state.Document) error
}

// DestroyPlanner is a lane's part of `plan -destroy`: what destroy would remove of it, into
// p (its changes and notes). It changes nothing.
type DestroyPlanner interface {
	PlanDestroy(ctx context.Context, t Target, doc *state.Document, p *plan.Plan) error
}

// LateDestroyer is a lane whose part the nodes use while they run (central's databases):
// DestroyLate judges it before destroy changes anything (and refuses a destroy the lane
// cannot go on with); the after it returns removes it once the deployment's objects are
// gone. In destroy, t.KeepClaims is destroy --keep-claims.
type LateDestroyer interface {
	DestroyLate(ctx context.Context, t Target, doc *state.Document) (after func() error, err error)
}

// Suspender is a lane's part of suspend and resume: Suspend before the Deployments go to 0,
// Resume once node runs again.
type Suspender interface {
	Suspend(ctx context.Context, t Target, rec Recorder) error
	Resume(ctx context.Context, t Target, rec Recorder, node string) error
}

// Reporter is a lane's part of status: it fills in gs what the lane knows of each node. doc
// is the state status read (nil when there is none): status reads it once for all lanes.
type Reporter interface {
	Status(ctx context.Context, t Target, doc *state.Document, gs *status.Group) error
}
