package engine

import (
	"context"
	"fmt"
	"maps"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/render"
	"slipway.dev/slipway/internal/spec"
	"slipway.dev/slipway/internal/state"
)

// State migrations (SPEC §6a). The template of a node with a state version carries the init
// container slipway-state (render.StateScript): it copies /var/lib on the volume when the
// data was handed to another version, and puts a copy taken at its own version back. The
// engine's part: it records, before a migration's template is applied, that the volume may
// hold a copy (Copy); on a failed rollout it sets back a template whose state step puts that
// copy back; the version is recorded only with a rollout that ran ready; and after one, a
// Job removes the copy.

// stateLabels keeps the label dev.slipway.state.version of the node images built in a plan.
type stateLabels struct {
	mu sync.Mutex
	m  map[string]string // node → the label's value
}

func (l *stateLabels) set(node, v string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.m == nil {
		l.m = map[string]string{}
	}
	l.m[node] = v
}

// stateVersions maps every node of g to its state version: the file's, else its image's
// label; "" when neither sets one. A label that cannot be a version fails the plan.
func (e *Engine) stateVersions(g *spec.Group) (map[string]string, error) {
	e.labels.mu.Lock()
	defer e.labels.mu.Unlock()
	out := make(map[string]string, len(g.Nodes))
	for _, n := range g.Nodes {
		v := n.State.Version
		if v == "" {
			if v = e.labels.m[n.Name]; v != "" {
				if err := spec.CheckStateVersion(v); err != nil {
					return nil, fmt.Errorf("node %s: image label %s: %w", n.Name, spec.LabelStateVersion, err)
				}
			}
		}
		out[n.Name] = v
	}
	return out, nil
}

// migrationInput fills in the plan's view of the state versions: the nodes' (versions), and
// what the state recorded they ran ready with and the copies it says their volumes hold.
func migrationInput(in *plan.Input, versions map[string]string, doc *state.Document) {
	in.Versions, in.StateVersions, in.Copies = maps.Clone(versions), map[string]string{}, map[string]plan.Copy{}
	if doc == nil {
		return
	}
	for name, ns := range doc.Nodes {
		in.StateVersions[name] = ns.StateVersion
		if ns.Copy != nil {
			in.Copies[name] = plan.Copy{From: ns.Copy.From, To: ns.Copy.To}
		}
	}
}

// templateVersion is the state version of a Deployment's pod template: its state step's; ""
// without one.
func templateVersion(d *unstructured.Unstructured) string {
	var dep appsv1.Deployment
	if d == nil || runtime.DefaultUnstructuredConverter.FromUnstructured(d.Object, &dep) != nil {
		return ""
	}
	v, _ := render.StateInitVersion(&dep.Spec.Template.Spec)
	return v
}

// withStateRestore is prev with a state step that puts cp back: the template a failed
// migration goes back to puts the copy taken at cp.From and handed to cp.To back before the
// node starts, and refuses a copy of any other hand-over.
func withStateRestore(prev *appsv1.Deployment, cp *state.StateCopy) *appsv1.Deployment {
	out := prev.DeepCopy()
	out.Spec.Template.Spec = *render.WithStateRestore(&prev.Spec.Template.Spec, firstImage(prev.Spec.Template.Spec.Containers), cp.From, cp.To)
	return out
}

// copyOf is the copy the state says node's volume may hold; nil when none.
func (r *recorder) copyOf(node string) *state.StateCopy {
	return nodeField(r, node, func(ns *state.NodeState) *state.StateCopy {
		if ns.Copy == nil {
			return nil
		}
		c := *ns.Copy
		return &c
	})
}

// stateVersion is the version the state says node last ran ready with.
func (r *recorder) stateVersion(node string) string {
	return nodeField(r, node, func(ns *state.NodeState) string { return ns.StateVersion })
}

// migrating records, before the template of a migration to version to is applied, that the
// volume may hold a copy: taken at the version the node ran ready with, or the copy held
// already (a migration that never ran ready: the data it holds is still the last good).
func (r *recorder) migrating(ctx context.Context, node, deployment, to string) error {
	return r.Update(ctx, "before the migration of deployment "+deployment, func(*state.Document) {
		ns := r.node(node)
		if ns.Copy == nil {
			ns.Copy = &state.StateCopy{From: ns.StateVersion}
		}
		ns.Copy.To = to
	})
}

// ranReady sets what a template at version that ran ready means for the state: the version
// is the data's now; a copy taken at that version was put back by its state step, and any
// other copy is no longer a backup (the remove-copy step removes it).
func ranReady(ns *state.NodeState, version string) {
	ns.StateVersion = version
	if ns.Copy == nil {
		return
	}
	if ns.Copy.From == version {
		ns.Copy = nil
		return
	}
	ns.Copy.To = version
}

// copyRemoved records that the removal Job removed node's copy.
func (r *recorder) copyRemoved(ctx context.Context, node, job string) error {
	return r.Update(ctx, "after Job "+job+" removed the copy of node "+node, func(*state.Document) { r.node(node).Copy = nil })
}

// versionText is a state version as messages say it: "none" for a node that had none.
func versionText(v string) string {
	if v == "" {
		return "none"
	}
	return v
}
