package engine

import (
	"context"
	"maps"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"slipway.dev/slipway/internal/engine/lane"
	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/spec"
)

// PlanDestroy is `plan -destroy` (SPEC §2): what Destroy would remove (its Scope), as a plan
// of deletions, claims marked destructive. It reads the cluster and the state and changes
// nothing.
func (e *Engine) PlanDestroy(ctx context.Context, t Target) (*plan.Plan, error) {
	t, err := e.adopting(ctx, t) // read as destroy will, once it adopted an earlier release's state
	if err != nil {
		return nil, err
	}
	scope, err := e.Scope(ctx, t, DestroyOptions{})
	if err != nil {
		return nil, err
	}
	doc, err := readState(ctx, t)
	if err != nil {
		return nil, err
	}
	p := &plan.Plan{Version: plan.FormatVersion, Group: t.Group.Name, Namespace: t.Namespace, Destroy: true,
		// The objects are named only where the namespace stays: say once that it does.
		ForeignNamespace: len(scope.Objects) > 0}
	if doc != nil {
		p.StateSerial, p.StateLineage = doc.Serial, doc.Lineage
	}
	if !scope.Empty() {
		// Scope names the objects only where the namespace stays; the plan shows them always.
		live, err := e.listOwn(ctx, t)
		if err != nil {
			return nil, err
		}
		ns := ""
		if scope.OwnNamespace {
			ns = t.Namespace
		}
		p.Nodes = destroyChanges(live, ns)
	}
	if err := e.planDestroyLanes(ctx, t, doc, p); err != nil {
		return nil, err
	}
	if t.adopt != nil {
		p.Notes = append(p.Notes, adoptNote(t))
	}
	switch {
	case scope.StateLocation != "":
		p.Notes = append(p.Notes, "the state of the group ("+scope.StateLocation+") is in the namespace and goes with it; the images stay in the registry")
	case doc != nil:
		p.Notes = append(p.Notes, "destroy deletes the group's state too; the images stay in the registry")
	}
	return p, nil
}

// destroyChanges lists per node (the group's own objects under "") the objects destroy
// deletes: every object of the group, and the namespace ns with everything in it when it
// goes ("" when it stays). A claim deleted loses the node's /var/lib.
func destroyChanges(live map[plan.Key]*unstructured.Unstructured, ns string) []plan.NodePlan {
	byNode := map[string][]plan.Change{}
	for k, u := range live {
		c := plan.Change{Key: k, Action: plan.Delete, ResourceVersion: u.GetResourceVersion(), UID: string(u.GetUID())}
		if k.Kind == "PersistentVolumeClaim" {
			c.Destructive = true
			c.Reason = "the node's state on /var/lib is lost"
		}
		node := u.GetLabels()[spec.LabelNode]
		byNode[node] = append(byNode[node], c)
	}
	if ns != "" {
		byNode[""] = append(byNode[""], plan.Change{
			Key: plan.Key{Kind: "Namespace", Name: ns}, Action: plan.Delete,
			Reason: "with everything in it, objects slipway did not make included",
		})
	}
	var out []plan.NodePlan
	for _, node := range slices.Sorted(maps.Keys(byNode)) {
		cs := byNode[node]
		slices.SortFunc(cs, func(a, b plan.Change) int { return lane.DeleteOrder(a.Key, b.Key) })
		out = append(out, plan.NodePlan{Node: node, Changes: cs})
	}
	return out
}
