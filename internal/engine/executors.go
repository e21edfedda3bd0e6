package engine

import (
	"context"

	"slipway.dev/slipway/internal/plan"
)

// executor runs one kind of step for one node.
type executor func(e *Engine, ctx context.Context, nr *nodeRun, st plan.Step) error

// executors holds the executor of each step kind. Each executor's file registers its kinds
// (in an init), so a new lane adds a file and grows no existing function.
var executors = map[plan.StepKind]executor{}

// register adds the executor of kind; a kind registered twice is a programming error.
func register(kind plan.StepKind, x executor) {
	if _, dup := executors[kind]; dup {
		panic("engine: two executors of step " + string(kind))
	}
	executors[kind] = x
}

// onRun adapts an executor that needs only the run, not the node's share of it.
func onRun(f func(e *Engine, ctx context.Context, r *run, st plan.Step) error) executor {
	return func(e *Engine, ctx context.Context, nr *nodeRun, st plan.Step) error {
		return f(e, ctx, nr.run, st)
	}
}
