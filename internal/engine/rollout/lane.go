// Package rollout is the rollout lane (SPEC §6 steps 3–6): the objects of the group and of
// each node applied (a node's config kept first, for a rollback to put back), a new claim
// awaited, the node's Deployment applied and its rollout followed, set back on failure to the
// last template that became ready, with the config that template read. It reaches the cluster
// through Cluster, the migrate lane through Migrator (the root lends both), and the engine
// only through internal/engine/lane.
package rollout

import (
	"context"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"slipway.dev/slipway/internal/engine/lane"
	"slipway.dev/slipway/internal/kube"
	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/spec"
	"slipway.dev/slipway/internal/state"
)

// Cluster is what the lane changes and reads of the cluster.
type Cluster interface {
	Apply(ctx context.Context, obj runtime.Object, opts kube.ApplyOptions) (*unstructured.Unstructured, error)
	Delete(ctx context.Context, k plan.Key, uid string) error
	WaitGone(ctx context.Context, k plan.Key, limit time.Duration) error
	// Get reads one object whole, a Secret's values included: the config a rollback puts back.
	Get(ctx context.Context, k plan.Key) (*unstructured.Unstructured, error)
	// ClaimsBindImmediately says whether claims of a StorageClass ("": the default) are bound
	// as they are made, not once their pod is scheduled.
	ClaimsBindImmediately(ctx context.Context, class string) (bool, error)
}

// Migrator is the migrate lane's part of a rollout (SPEC §6a), which the root lends: the one
// edge between two lanes (issue 45), kept to what a rollout records and sets back.
type Migrator interface {
	// Migrating records, before the template of a migration to version to is applied, that
	// node's volume may hold a copy.
	Migrating(ctx context.Context, rec lane.Recorder, node, deployment, to string) error
	// Restoring is prev made to put back the copy the state says node's volume holds, and
	// the words that say so; prev and "" when it holds none.
	Restoring(rec lane.Recorder, node string, prev *appsv1.Deployment) (*appsv1.Deployment, string)
	// RanReady sets in ns what a template at version that ran ready means for the state.
	RanReady(ns *state.NodeState, version string)
	// TemplateVersion is the state version of a rendered Deployment's pod template.
	TemplateVersion(d *unstructured.Unstructured) string
}

// Options configure the lane.
type Options struct {
	Kube    Cluster
	Migrate Migrator
	// Parallelism bounds the object applies in flight: 200 Services created at once contend
	// for the cluster's IP and port allocators until the API server times them out.
	Parallelism int
	// Limit is a node's rollout limit: --timeout, else its rolloutTimeout, else the default.
	Limit func(n *spec.Node) time.Duration
}

// Lane is the rollout lane of an engine.
type Lane struct {
	env    lane.Env
	o      Options
	writes chan struct{} // the object applies in flight, Parallelism at most
	binds  bindingModes  // per StorageClass, for await-claim
}

// New returns the lane.
func New(env lane.Env, o Options) *Lane {
	return &Lane{env: env, o: o, writes: make(chan struct{}, max(o.Parallelism, 1))}
}

// Name names the lane.
func (l *Lane) Name() string { return "rollout" }

var _ lane.Stepper = (*Lane)(nil)

// Executors are the lane's steps.
func (l *Lane) Executors() map[plan.StepKind]lane.Executor {
	return map[plan.StepKind]lane.Executor{
		plan.StepApplyObjects:    l.applyNodeObjects, // configrestore.go, objects.go
		plan.StepAwaitClaim:      l.awaitClaim,       // claimwait.go
		plan.StepApplyDeployment: l.applyDeployment,  // rollout.go
		plan.StepAwaitRollout:    l.awaitRollout,     // rollout.go
	}
}
