// Package secrets is the secrets lane. Its check of a node's secrets server (FR-004e): before
// a plan renders anything, it asks each server the group's sidecars log in to whether it
// answers and whether the kubernetes auth role of each node binds as the sidecar needs. It
// reads no secret value. Its notes go into the plan; a role that binds otherwise stops it.
// The Secrets slipway makes (SPEC §3a): a plan holds them without their values, hashed with
// the group's secret key (key.go), which lives in the state and which the apply records
// before anything hashed with it reaches the cluster; the apply reads their values again and
// refuses any that changed since the plan (data.go). A plan also checks that the Secrets and
// ConfigMaps the nodes reference exist (references.go).
package secrets

import (
	"context"

	"slipway.dev/slipway/internal/engine/lane"
	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/spec"
)

// Options configure the lane.
type Options struct {
	// Parallelism bounds the servers asked at a time.
	Parallelism int
	// Connect makes the client of a server (a test's stand-in); nil: OpenBao's client with
	// the token of SLIPWAY_OPENBAO_TOKEN(_FILE).
	Connect func(ctx context.Context, s *spec.SecretsServer) (Server, error)
}

// Lane is the secrets lane of an engine.
type Lane struct{ o Options }

// New returns the lane.
func New(o Options) *Lane {
	o.Parallelism = max(o.Parallelism, 1)
	return &Lane{o: o}
}

// Name names the lane.
func (l *Lane) Name() string { return "secrets" }

// Prepare checks the group's secrets servers; its notes go into the plan's.
func (l *Lane) Prepare(ctx context.Context, pr *lane.PlanRun) error {
	notes, err := l.checkSecretsServers(ctx, pr.Target.Group, pr.Target.Namespace)
	if err != nil {
		return err
	}
	pr.Notes = append(pr.Notes, notes...)
	return nil
}

// Fill fills in the values of the Secrets slipway makes, read now from the sources the group
// file names (WithData).
func (l *Lane) Fill(p *plan.Plan, t lane.Target) (*plan.Plan, error) { return WithData(p, t.Group) }

// Start records the group's secret key, before any Secret or template hashed with a new key
// reaches the cluster (RecordKey).
func (l *Lane) Start(ctx context.Context, p *plan.Plan, rec lane.Recorder) error {
	return RecordKey(ctx, rec, p.SecretKey)
}

var (
	_ lane.Preparer = (*Lane)(nil)
	_ lane.Starter  = (*Lane)(nil)
)
