// Package migrate is the lane of state migrations (SPEC §6a). The template of a node with a
// state version carries the init container slipway-state (render.StateScript): it copies
// /var/lib on the volume when the data was handed to another version, and puts a copy taken
// at its own version back. The lane's part: each node's state version (the file's, else its
// image's label), what the state says of the versions and copies for the plan, the Jobs of
// another owner where a removal Job would go, and the remove-copy step, which removes a copy
// once the migration ran ready. What the rollout does of a migration (record the copy before
// its template is applied, set a failed one back to a template that puts the copy back,
// record the version once it ran ready) it asks this lane (rollout.go), which the root hands
// the rollout lane as its Migrator: neither lane imports the other.
package migrate

import (
	"context"
	"time"

	batchv1 "k8s.io/api/batch/v1"

	"slipway.dev/slipway/internal/engine/lane"
	"slipway.dev/slipway/internal/plan"
)

// Cluster is what the lane asks of the cluster: the removal Job, and the Job of that name a
// plan checks the owner of.
type Cluster interface {
	// RunJob creates job (after deleting one of that name left by an earlier run), waits up to
	// limit for it to succeed or fail, and deletes it with its pods.
	RunJob(ctx context.Context, job *batchv1.Job, limit time.Duration) error
	// Job reads a Job (nil when none): a plan's ownership check of the removal Job's name.
	Job(ctx context.Context, ns, name string) (*batchv1.Job, error)
}

// Lane is the migrate lane of an engine.
type Lane struct {
	env  lane.Env
	kube Cluster
}

// New returns the lane.
func New(env lane.Env, kube Cluster) *Lane { return &Lane{env: env, kube: kube} }

// Name names the lane.
func (l *Lane) Name() string { return "migrate" }

// Executors are the lane's steps.
func (l *Lane) Executors() map[plan.StepKind]lane.Executor {
	return map[plan.StepKind]lane.Executor{
		plan.StepRemoveCopy: l.removeCopy, // removecopy.go
	}
}

// Input fills in the plan's view of the state versions (the nodes', in.Versions): what the
// state recorded they ran ready with, the copies it says their volumes hold, and the Jobs of
// another owner named as a removal Job would be.
func (l *Lane) Input(ctx context.Context, pr *lane.PlanRun, in *plan.Input) error {
	input(in, pr.Doc)
	jobs, err := l.foreignJobs(ctx, pr.Target, pr.Doc, in.Versions)
	if err != nil {
		return err
	}
	in.ForeignJobs = jobs
	return nil
}

var (
	_ lane.Stepper  = (*Lane)(nil)
	_ lane.Inputter = (*Lane)(nil)
)
