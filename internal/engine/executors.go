package engine

import (
	"context"

	"slipway.dev/slipway/internal/plan"
)

// executor runs one kind of step for one node.
type executor func(e *Engine, ctx context.Context, nr *nodeRun, st plan.Step) error

// executors holds the executor of each step kind the root runs, each in the file of its part
// of the engine; a lane package's steps come from its Executors (lanes.go). A push runs
// before the nodes, apart.
var executors = map[plan.StepKind]executor{
	plan.StepPrune:      onRun((*Engine).prune),      // prune.go
	plan.StepRemoveNode: onRun((*Engine).removeNode), // prune.go
}

// onRun adapts an executor that needs only the run, not the node's share of it.
func onRun(f func(e *Engine, ctx context.Context, r *run, st plan.Step) error) executor {
	return func(e *Engine, ctx context.Context, nr *nodeRun, st plan.Step) error {
		return f(e, ctx, nr.run, st)
	}
}
