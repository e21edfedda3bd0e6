// Package secrets is the secrets lane's check of a node's secrets server (FR-004e): before a
// plan renders anything, it asks each server the group's sidecars log in to whether it
// answers and whether the kubernetes auth role of each node binds as the sidecar needs. It
// reads no secret value. Its notes go into the plan; a role that binds otherwise stops it.
package secrets

import (
	"context"

	"slipway.dev/slipway/internal/engine/lane"
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

var _ lane.Preparer = (*Lane)(nil)
