// Package nsmove is the lane of --move-namespace (issue 35 item 6): a plan that moves a group
// to another namespace says what it deletes in the old one (every object of the group but its
// claims, which stay), and the apply deletes that once every node runs ready in the new one.
package nsmove

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"slipway.dev/slipway/internal/engine/lane"
	"slipway.dev/slipway/internal/plan"
)

// Cluster is what the lane reads of the cluster: the group's objects in the old namespace.
type Cluster interface {
	ListManaged(ctx context.Context, ns, selector string) (map[plan.Key]*unstructured.Unstructured, error)
}

// Lane is the namespace-move lane of an engine.
type Lane struct {
	env  lane.Env
	kube Cluster
}

// New returns the lane.
func New(env lane.Env, kube Cluster) *Lane { return &Lane{env: env, kube: kube} }

// Name names the lane.
func (l *Lane) Name() string { return "nsmove" }

// Amend puts the move into p, with a note of what it does.
func (l *Lane) Amend(ctx context.Context, pr *lane.PlanRun, p *plan.Plan) error {
	m, err := l.planMove(ctx, pr.Target, pr.Doc)
	if err != nil {
		return err
	}
	if p.Move = m; m != nil {
		p.Notes = append(p.Notes, moveNote(p))
	}
	return nil
}

// Finish ends an apply that moves the group (finishMove).
func (l *Lane) Finish(ctx context.Context, p *plan.Plan, rec lane.Recorder, failed int) error {
	return l.finishMove(ctx, p, rec, failed)
}

var (
	_ lane.Amender  = (*Lane)(nil)
	_ lane.Finisher = (*Lane)(nil)
)
