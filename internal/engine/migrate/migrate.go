package migrate

import (
	"context"
	"fmt"
	"maps"
	"slices"

	batchv1 "k8s.io/api/batch/v1"

	"slipway.dev/slipway/internal/engine/lane"
	"slipway.dev/slipway/internal/kube"
	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/render"
	"slipway.dev/slipway/internal/spec"
	"slipway.dev/slipway/internal/state"
)

// Versions maps every node of g to its state version: the file's, else its image's label
// (labels, by node); "" when neither sets one. A label that cannot be a version fails the
// plan.
func Versions(g *spec.Group, labels map[string]string) (map[string]string, error) {
	out := make(map[string]string, len(g.Nodes))
	for _, n := range g.Nodes {
		v := n.State.Version
		if v == "" {
			if v = labels[n.Name]; v != "" {
				if err := spec.CheckStateVersion(v); err != nil {
					return nil, fmt.Errorf("node %s: image label %s: %w", n.Name, spec.LabelStateVersion, err)
				}
			}
		}
		out[n.Name] = v
	}
	return out, nil
}

// input fills in what the state recorded the nodes ran ready with and the copies it says
// their volumes hold.
func input(in *plan.Input, doc *state.Document) {
	in.StateVersions, in.Copies = map[string]string{}, map[string]plan.Copy{}
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

// foreignJobs reads, for each node of t whose volume holds or will hold a copy of /var/lib
// that apply removes, the Job named as its removal Job (<node>-state) and returns those
// slipway did not make for the group: a plan that would remove the copy shows each as a
// conflict (issue 35 item 3). A copy is held when the state says so, and taken by a migration:
// a node the state recorded whose version (versions, the file's) is not the one it ran ready
// with (issue 43 item 12). A plan reads them only for such nodes, so a group without one
// costs no request.
func (l *Lane) foreignJobs(ctx context.Context, t lane.Target, doc *state.Document, versions map[string]string) (map[string]plan.Object, error) {
	out := map[string]plan.Object{}
	if doc == nil {
		return out, nil
	}
	for _, node := range slices.Sorted(maps.Keys(doc.Nodes)) {
		ns := doc.Nodes[node]
		migrates := versions[node] != "" && versions[node] != ns.StateVersion
		if (ns.Copy == nil && !migrates) || t.Group.Node(node) == nil {
			continue
		}
		j, err := l.kube.Job(ctx, t.Namespace, render.StateJobName(node))
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
