package migrate

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"slipway.dev/slipway/internal/engine/lane"
	"slipway.dev/slipway/internal/render"
	"slipway.dev/slipway/internal/state"
)

// The lane's part of a rollout (the rollout lane's Migrator, which the root hands it this
// lane as): what a migration records before its template is applied, the template a failed
// one goes back to, and what a template that ran ready means for the state.

// Migrating records, before the template of a migration of node's deployment to version to
// is applied, that the volume may hold a copy (state.NodeState.Migrating).
func (l *Lane) Migrating(ctx context.Context, rec lane.Recorder, node, deployment, to string) error {
	return rec.Update(ctx, "before the migration of deployment "+deployment, func(d *state.Document) {
		lane.NodeOf(d, node).Migrating(to)
	})
}

// Restoring is prev made to put back the copy the state says node's volume holds, with the
// words that say so; prev and "" when it holds none. A failed migration goes back to it: its
// state step puts the copy taken at the old version back before the node starts.
func (l *Lane) Restoring(rec lane.Recorder, node string, prev *appsv1.Deployment) (*appsv1.Deployment, string) {
	cp := copyOf(rec, node)
	if cp == nil {
		return prev, ""
	}
	return render.DeploymentWithStateRestore(prev, cp.From, cp.To),
		fmt.Sprintf(" (its init container %s puts back the copy of /var/lib taken at state version %s; the state keeps that version)", render.InitContainerState, state.VersionText(cp.From))
}

// RanReady sets in ns what a template at version that ran ready means for the state
// (state.NodeState.RanReady).
func (l *Lane) RanReady(ns *state.NodeState, version string) { ns.RanReady(version) }

// TemplateVersion is the state version of a rendered Deployment's pod template.
func (l *Lane) TemplateVersion(d *unstructured.Unstructured) string {
	return render.DeploymentStateVersion(d)
}
