// Package roles is the lane of a node's roles (FR-006a, SPEC §6 step 7): a role whose
// template must match the node's new image goes to 0 before the node rolls out (stop-role),
// the roles start only next to a ready node (await-ready, for a node the run does not roll
// out), and each role's Deployment is applied at its replicas and waited for (start-role); a
// role that does not become ready goes back to 0, or to its last ready template when it was
// rolled without a stop. It reaches the cluster through Cluster and the kit's Env (applies,
// waits, failure reports, set-backs), and the engine only through internal/engine/lane.
package roles

import (
	"context"

	"slipway.dev/slipway/internal/engine/lane"
	"slipway.dev/slipway/internal/plan"
)

// Cluster is what the lane changes of the cluster besides its applies (lane.Env.Apply): a
// role's replicas.
type Cluster interface {
	// Scale sets a Deployment's replicas and returns its generation.
	Scale(ctx context.Context, ns, name string, replicas int32) (int64, error)
}

// Lane is the roles lane of an engine.
type Lane struct {
	env  lane.Env
	kube Cluster
}

// New returns the lane.
func New(env lane.Env, kube Cluster) *Lane { return &Lane{env: env, kube: kube} }

// Name names the lane.
func (l *Lane) Name() string { return "roles" }

// Executors are the lane's steps.
func (l *Lane) Executors() map[plan.StepKind]lane.Executor {
	return map[plan.StepKind]lane.Executor{
		plan.StepStopRole:   l.stopRole,   // roles.go
		plan.StepAwaitReady: l.awaitReady, // rolegate.go
		plan.StepStartRole:  l.startRole,  // roles.go
	}
}

var _ lane.Stepper = (*Lane)(nil)
