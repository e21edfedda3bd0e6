package engine

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"slipway.dev/slipway/internal/engine/lane"
	"slipway.dev/slipway/internal/engine/secrets"
	"slipway.dev/slipway/internal/event"
	"slipway.dev/slipway/internal/kube"
	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/render"
	"slipway.dev/slipway/internal/spec"
)

// listSplit lists the objects of the kinds slipway makes in ns and splits them into the
// group's (its slipway.dev/group label) and the others. A desired object whose name one of
// the others holds must not be taken over (issue 11 item 4). Listing without a label selector
// costs the same requests as with one (one LIST per kind), so a no-op plan stays as cheap.
// partial: the others are only those of a wave run's groups (listNamespace).
func (e *Engine) listSplit(ctx context.Context, t Target) (own, foreign map[plan.Key]plan.Object, partial bool, err error) {
	all, partial, err := e.listNamespace(ctx, t.Namespace)
	if err != nil {
		return nil, nil, false, err
	}
	own, foreign = splitOwn(all, t)
	return own, foreign, partial, nil
}

// splitOwn splits all into t's objects and the others; those of the key t adopts are t's, as
// they will be once relabelled (adopt.go).
func splitOwn(all map[plan.Key]plan.Object, t Target) (own, foreign map[plan.Key]plan.Object) {
	own = make(map[plan.Key]plan.Object, len(all))
	foreign = map[plan.Key]plan.Object{}
	for k, u := range all {
		if t.owns(u.GetLabels()[spec.LabelGroup]) {
			own[k] = t.relabelled(u)
		} else {
			foreign[k] = u
		}
	}
	return own, foreign
}

// listLive reads the group's live objects, its namespace, whether the cluster honours a
// pod's stop signal and whether it serves ServiceMonitors.
func (e *Engine) listLive(ctx context.Context, t Target, readNamespace func() (*unstructured.Unstructured, error)) listed {
	var l listed
	l.live, l.foreign, l.partial, l.err = e.listSplit(ctx, t)
	if l.err == nil {
		l.ns, l.err = readNamespace()
		// A namespace that is not there holds nothing, labelled or not.
		l.partial = l.partial && l.ns != nil
	}
	if l.err == nil {
		l.features.stop, l.stopNote = e.stopSignal(ctx, t.Group, t.Namespace, l.live, l.ns != nil)
		l.features.monitors, l.monitorNote, l.err = e.serviceMonitors(ctx, t.Group)
	}
	return l
}

// labelledReader is a wave run's shared read (SharedReads): the objects of a namespace that
// carry one of the run's groups' labels, false when it does not read ns.
type labelledReader interface {
	Labelled(ctx context.Context, ns string) (map[plan.Key]plan.Object, bool)
}

// listNamespace lists every object of the kinds slipway makes in ns; in a wave run, the
// objects of the run's groups only, from its shared read (partial). Those hold every object
// of the group, which is all a no-op plan needs; an object none of them labels (someone
// else's) can hold a name the plan makes or one a node references, and a plan that finds such
// a name missing completes the list (completeForeign).
func (e *Engine) listNamespace(ctx context.Context, ns string) (map[plan.Key]plan.Object, bool, error) {
	if r, ok := e.o.Kube.(labelledReader); ok {
		if objs, ok := r.Labelled(ctx, ns); ok {
			return objs, true, nil
		}
	}
	all, err := e.o.Kube.ListManagedObjects(ctx, ns, "")
	return all, false, err
}

// completeForeign reads the whole namespace when l holds a partial list and a plan needs an
// object it lacks: the others then hold every object of the namespace, as a plan alone reads.
func (e *Engine) completeForeign(ctx context.Context, t Target, l *listed, lacks bool) error {
	if !l.partial || !lacks {
		return nil
	}
	all, err := e.o.Kube.ListManagedObjects(ctx, t.Namespace, "")
	if err != nil {
		return err
	}
	_, l.foreign = splitOwn(all, t)
	l.partial = false
	return nil
}

// referencesExist checks the Secrets and ConfigMaps the nodes reference
// (secrets.CheckReferences); a partial list that lacks one is completed first.
func (e *Engine) referencesExist(ctx context.Context, t Target, l *listed) error {
	err := secrets.CheckReferences(t.Group, t.Namespace, l.live, l.foreign)
	if err == nil || !l.partial {
		return err
	}
	if err := e.completeForeign(ctx, t, l, true); err != nil {
		return err
	}
	return secrets.CheckReferences(t.Group, t.Namespace, l.live, l.foreign)
}

// lacksAny reports whether some object of objs of a kind slipway lists in ns is neither in
// live nor in foreign.
func lacksAny(objs []render.Object, ns string, live, foreign map[plan.Key]plan.Object) bool {
	for _, o := range objs {
		gvk := o.GetObjectKind().GroupVersionKind()
		if o.GetNamespace() != ns || !slices.Contains(kube.ManagedKinds, gvk) {
			continue // the Namespace, read as it is; nothing a LIST of ns would show
		}
		k := plan.Key{Kind: gvk.Kind, Namespace: ns, Name: o.GetName()}
		if live[k] == nil && foreign[k] == nil {
			return true
		}
	}
	return false
}

// ownsNamespace reports whether the live namespace ns was created by slipway for group: only
// then does it carry the group's label, since slipway never labels a namespace it did not
// create (issue 11 item 3).
func ownsNamespace(ns *unstructured.Unstructured, group string) bool {
	return ns != nil && ns.GetLabels()[spec.LabelGroup] == group
}

// withoutNamespace drops the Namespace from the desired objects: a namespace slipway did not
// create is deployed into as it is, never relabelled.
func withoutNamespace(desired []render.Object) []render.Object {
	out := desired[:0:0]
	for _, d := range desired {
		if d.GetObjectKind().GroupVersionKind().Kind != "Namespace" {
			out = append(out, d)
		}
	}
	return out
}

// blockedNodes returns the nodes apply must not roll out (an object of theirs is being
// deleted outside slipway, issue 11 item 5), each with its reason, and reports them.
func (e *Engine) blockedNodes(p *plan.Plan) map[string]error {
	failed := map[string]error{}
	for _, np := range p.Nodes {
		if err := p.NodeBlocked(np.Node); err != nil {
			failed[np.Node] = err
			e.emit(event.Event{Node: np.Node, Phase: event.PhaseFailed, Message: err.Error()})
		}
	}
	return failed
}

// otherDeployments refuses a namespace that holds objects another slipway deployment made
// (their slipway.dev/group label names another key), unless the group file shares the
// namespace (sharedNamespace: true): a namespace belongs to one deployment, as its objects'
// names, selectors and destroy assume (issue 46). Slipway's state Secrets
// (kubernetes://NAMESPACE) are state, not a deployment's objects.
func otherDeployments(t Target, foreign map[plan.Key]plan.Object) error {
	if t.Group.SharedNamespace {
		return nil
	}
	owners := map[string][]string{}
	for k, o := range foreign {
		l := o.GetLabels()
		owner := l[spec.LabelGroup]
		if l[spec.LabelManagedBy] != spec.ManagedBy || owner == "" || owner == t.Group.Name || l["app.kubernetes.io/component"] == "state" {
			continue
		}
		owners[owner] = append(owners[owner], k.Kind+" "+k.Name)
	}
	if len(owners) == 0 {
		return nil
	}
	var parts []string
	note := ""
	for _, owner := range slices.Sorted(maps.Keys(owners)) {
		objs := owners[owner]
		slices.Sort(objs)
		if len(objs) > 3 {
			objs = append(objs[:3], fmt.Sprintf("%d more", len(owners[owner])-3))
		}
		parts = append(parts, fmt.Sprintf("%s (%s)", owner, strings.Join(objs, ", ")))
		note += legacyNote(t.Group, owner)
	}
	return &PreflightError{Msg: fmt.Sprintf("namespace %s holds objects of another deployment, %s: a namespace belongs to one deployment; deploy %s into another namespace, or set sharedNamespace: true in the group files that share it%s",
		t.Namespace, strings.Join(parts, "; "), t.Group.Name, note)}
}

// A plan reads the live objects as the cluster client gave them (plan.Object): typed for the
// built-in kinds, so that a no-op plan turns none of its 5,000 objects into maps (issue 17).
// The readers that look inside every node's object read the typed fields; lane.AsTyped converts
// an unstructured one (a list that came as JSON, the engine's fake cluster) for them.

// liveContainers are the containers of a live Deployment's pod template, nil for none.
func liveContainers(o plan.Object) []corev1.Container {
	if d := lane.AsTyped[appsv1.Deployment](o); d != nil {
		return d.Spec.Template.Spec.Containers
	}
	return nil
}

// liveContainerImage is the image of the named container of a live Deployment, "" for none.
func liveContainerImage(o plan.Object, container string) string {
	for _, c := range liveContainers(o) {
		if c.Name == container {
			return c.Image
		}
	}
	return ""
}
