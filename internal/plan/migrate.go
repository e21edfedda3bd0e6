package plan

import (
	"fmt"
	"time"

	"slipway.dev/slipway/internal/spec"
)

// Migration is a change of a node's state version (SPEC §6a): the new pod copies /var/lib on
// its volume before the node starts; a failed rollout puts the copy back.
type Migration struct {
	From string `json:"from"` // the version the node last ran ready with; "" before it had one
	To   string `json:"to"`
}

// Copy is a copy of /var/lib on a node's volume: taken at version From before the migration
// to To.
type Copy struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// addMigrations marks, per node of the file, a version change that its Deployment's update
// rolls out, and a copy left held after its migration ran ready (SPEC §6a). A node created in
// this run has no data to copy: its version is recorded when it runs ready.
func addMigrations(p *Plan, in Input) {
	ix := p.Index()
	for i := range p.Nodes {
		np := &p.Nodes[i]
		want, ok := in.Versions[np.Node]
		if !ok || np.Removed {
			continue
		}
		had := in.StateVersions[np.Node]
		c := ix.Change(Key{Kind: "Deployment", Namespace: in.Namespace, Name: np.Node})
		if want != "" && want != had && c != nil && c.Action == Update {
			np.Migration = &Migration{From: had, To: want}
		}
		// A copy whose migration was recorded as run ready is no backup any more: a migration
		// in this run needs the place, and a failed one must not put it back.
		if cp, held := in.Copies[np.Node]; held && cp.To == had && cp.From != had {
			np.RemoveCopy = &cp
		}
		// Apply removes the copy with a Job named <node>-state: the one left, and the one a
		// migration takes once it runs ready (issue 43 item 12: its removal was refused only
		// after the rollout, while the plan showed no conflict).
		migrates := np.Migration != nil && !in.Suspended
		if j := in.ForeignJobs[np.Node]; j != nil && (np.RemoveCopy != nil || migrates) {
			np.Changes = append(np.Changes, jobConflict(removeCopyJob(in.Namespace, np.Node), j, in.Group, np.Node))
		}
	}
}

// removeCopy is the step that removes a node's copy once the data is at version.
func removeCopy(ns, node, version string, limit time.Duration) Step {
	k := removeCopyJob(ns, node)
	return Step{Kind: StepRemoveCopy, Node: node, Object: &k, Limit: limit, Payload: CopyRemoval{version}}
}

// removeCopyJob is the key of the Job that removes node's copy: named as its claim.
func removeCopyJob(ns, node string) Key {
	return Key{Kind: "Job", Namespace: ns, Name: spec.ClaimName(node)}
}

// migrationText is "1 -> 2", "none -> 2" for a node that had no version.
func migrationText(m Migration) string { return quoted(m.From) + " -> " + quoted(m.To) }

// quoted is a version as plan prints it: "none" for no version.
func quoted(v string) string {
	if v == "" {
		return "none"
	}
	return v
}

// The migrate lane's payloads (SPEC §6a). Two ride on the rollout's steps: their StepText is
// the lane's share of the rollout's line, which Step.String puts in its place; the third is
// the version its own remove-copy step keeps. Each member is the step's member of the same
// name in JSON ("migration", "stateVersion").

// MigrationCopy is the payload of the apply-deployment of a node whose state version
// changes: its new pod's init container copies /var/lib before the node starts.
type MigrationCopy struct {
	Migration Migration `json:"migration"`
}

// StepText is what the migration adds to the apply-deployment's line.
func (m MigrationCopy) StepText() string {
	return fmt.Sprintf("state migration %s: its init container %s copies /var/lib on the volume before the node starts", migrationText(m.Migration), spec.InitContainerState)
}

// MigrationRestore is the payload of the await-rollout that follows a MigrationCopy: a failed
// rollout puts the copy back, and the state keeps the version the node had.
type MigrationRestore struct {
	Migration Migration `json:"migration"`
}

// StepText is what the migration adds to the await-rollout's rollback.
func (m MigrationRestore) StepText() string {
	return "which puts the copy of /var/lib back first; the state keeps version " + quoted(m.Migration.From)
}

// migrationPayloads are the payloads of a node's apply-deployment and await-rollout: none
// without a migration.
func migrationPayloads(m *Migration) (apply, await StepPayload) {
	if m == nil {
		return nil, nil
	}
	return MigrationCopy{*m}, MigrationRestore{*m}
}

// CopyRemoval is the payload of a remove-copy step: the state version whose data the step
// keeps (never "": a copy is taken for a migration to a version).
type CopyRemoval struct {
	StateVersion string `json:"stateVersion,omitempty"`
}

// StepText is what the version adds to the remove-copy's line.
func (c CopyRemoval) StepText() string { return "the data stays at state version " + c.StateVersion }

var (
	_ StepPayload = MigrationCopy{}
	_ StepPayload = MigrationRestore{}
	_ StepPayload = CopyRemoval{}
)
