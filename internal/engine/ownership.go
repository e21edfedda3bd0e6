package engine

import (
	"context"
	"maps"
	"slices"

	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"slipway.dev/slipway/internal/event"
	"slipway.dev/slipway/internal/kube"
	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/render"
	"slipway.dev/slipway/internal/spec"
	"slipway.dev/slipway/internal/state"
)

// listSplit lists the objects of the kinds slipway makes in ns and splits them into the
// group's (its slipway.dev/group label) and the others. A desired object whose name one of
// the others holds must not be taken over (issue 11 item 4). Listing without a label selector
// costs the same requests as with one (one LIST per kind), so a no-op plan stays as cheap.
func (e *Engine) listSplit(ctx context.Context, ns, group string) (own, foreign map[plan.Key]plan.Object, err error) {
	all, err := e.o.Kube.ListManagedObjects(ctx, ns, "")
	if err != nil {
		return nil, nil, err
	}
	own = make(map[plan.Key]plan.Object, len(all))
	foreign = map[plan.Key]plan.Object{}
	for k, u := range all {
		if u.GetLabels()[spec.LabelGroup] == group {
			own[k] = u
		} else {
			foreign[k] = u
		}
	}
	return own, foreign, nil
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

// foreignJobs reads, for each node of t whose volume the state says holds a copy, the Job
// named as its removal Job (<node>-state) and returns those slipway did not make for the
// group: a plan that would remove the copy shows each as a conflict (issue 35 item 3). A
// plan reads them only for held copies, so a group without one costs no request.
func (e *Engine) foreignJobs(ctx context.Context, t Target, doc *state.Document) (map[string]plan.Object, error) {
	out := map[string]plan.Object{}
	if doc == nil {
		return out, nil
	}
	for _, node := range slices.Sorted(maps.Keys(doc.Nodes)) {
		if doc.Nodes[node].Copy == nil || t.Group.Node(node) == nil {
			continue
		}
		j, err := e.o.Kube.Job(ctx, t.Namespace, render.StateJobName(node))
		if err != nil {
			return nil, err
		}
		if j != nil && !kube.JobOwnedBy(j.Labels, t.Group.Name) {
			j.SetGroupVersionKind(batchv1.SchemeGroupVersion.WithKind("Job"))
			out[node] = j
		}
	}
	return out, nil
}
