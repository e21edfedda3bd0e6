package engine

import (
	"context"
	"fmt"
	"os"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"slipway.dev/slipway/internal/engine/spire"
	"slipway.dev/slipway/internal/event"
	"slipway.dev/slipway/internal/kube"
	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/render"
	"slipway.dev/slipway/internal/spec"
)

// The SPIRE lane's hooks (internal/engine/spire): its plan before the objects are rendered,
// its step before any node, its part of destroy.

// SpireConnector makes the lane's connections to the server and the spire node
// (spire.Connect unless a test gives its own), and the cluster it reads (nil: Options.Kube).
type SpireConnector func(ctx context.Context, s *spec.Spire) (*spire.Conn, error)

// spireLane is the lane of t, nil without `spire:`; done closes its connections.
func (e *Engine) spireLane(ctx context.Context, t Target) (lane *spire.Lane, done func(), err error) {
	s := t.Group.Spire
	if s == nil {
		return nil, func() {}, nil
	}
	kc, ok := e.spireCluster()
	if !ok {
		return nil, nil, fmt.Errorf("group %s: spire: the cluster client cannot do what the SPIRE lane needs", t.Group.Name)
	}
	connect := e.o.SpireConnect
	if connect == nil {
		connect = spire.Connect
	}
	c, err := connect(ctx, s)
	if err != nil {
		return nil, nil, fmt.Errorf("group %s: %w", t.Group.Name, err)
	}
	nodes := make([]string, len(t.Group.Nodes))
	for i, n := range t.Group.Nodes {
		nodes[i] = n.Name
	}
	return &spire.Lane{Spire: s, Group: t.Group.Name, Namespace: t.Namespace, Nodes: nodes,
		Server: c.Server, Node: c.Node, Kube: kc, APIServer: os.Getenv(spec.EnvSpireAPIServer)}, c.Close, nil
}

// spireStart opens the lane of t and reads what render needs of it (nil without `spire:`);
// done closes the lane.
func (e *Engine) spireStart(ctx context.Context, t Target) (lane *spire.Lane, done func(), rs *render.Spire, err error) {
	lane, done, err = e.spireLane(ctx, t)
	if err != nil || lane == nil {
		return nil, func() {}, nil, err
	}
	cluster, bundle, err := lane.Read(ctx)
	if err != nil {
		done()
		return nil, func() {}, nil, fmt.Errorf("group %s: %w", t.Group.Name, err)
	}
	return lane, done, &render.Spire{Cluster: cluster, Bundle: bundle}, nil
}

// planSpire is the lane's plan, its entries bound to the pods render made (desired).
func (e *Engine) planSpire(ctx context.Context, t Target, lane *spire.Lane, desired []render.Object) (*spire.Planned, error) {
	if lane == nil {
		return nil, nil
	}
	lane.PodLabels = map[string]string{}
	for _, o := range desired {
		if d, ok := o.(*appsv1.Deployment); ok && d.Spec.Template.Labels[spec.LabelRole] == "" {
			if v := d.Spec.Template.Labels[spec.LabelSpirePod]; v != "" {
				lane.PodLabels[d.Spec.Template.Labels[spec.LabelNode]] = v
			}
		}
	}
	p, err := lane.Plan(ctx)
	if err != nil {
		return nil, fmt.Errorf("group %s: %w", t.Group.Name, err)
	}
	return p, nil
}

// spirePodLabels are the nodes' LabelSpirePod values in the plan apply runs (its main
// Deployments), read from the run's objects: Apply takes them out of the plan (p.Desired is
// nil by the time a step runs). The lane checks their form before an entry selects them.
func spirePodLabels(objs *objectSet) (map[string]string, error) {
	out := map[string]string{}
	for _, k := range objs.keysOf("Deployment") {
		d := objs.get(k)
		if d == nil {
			continue
		}
		if plan.IsStub(d) {
			return nil, fmt.Errorf("%s: the plan holds a stub of it and not the object", k)
		}
		labels, _, _ := unstructured.NestedStringMap(d.Object, "spec", "template", "metadata", "labels")
		if v := labels[spec.LabelSpirePod]; v != "" && labels[spec.LabelRole] == "" {
			out[labels[spec.LabelNode]] = v
		}
	}
	return out, nil
}

// applySpire runs a spire step: the server and the spire node made ready before any node.
// The step's changes are never run as they are (a saved plan is a file anyone may edit):
// the lane plans again from the validated group file and refuses when they differ.
func (e *Engine) applySpire(ctx context.Context, r *run, st plan.Step) error {
	lane, done, err := e.spireLane(ctx, r.t)
	if err != nil {
		return err
	}
	if lane == nil {
		e.emit(event.Event{Phase: event.PhaseApply, Message: st.String()})
		return e.retireSpireLeftovers(ctx, r.t)
	}
	defer done()
	if lane.PodLabels, err = spirePodLabels(r.objs); err != nil {
		return fmt.Errorf("group %s: spire: %w", r.t.Group.Name, err)
	}
	e.emit(event.Event{Phase: event.PhaseApply, Message: st.String()})
	if err := lane.ApplySaved(ctx, st.Spire); err != nil {
		return fmt.Errorf("group %s: %w", r.t.Group.Name, err)
	}
	return nil
}

// planDestroySpire is what destroy retires of the lane; nil without `spire:`.
func (e *Engine) planDestroySpire(ctx context.Context, t Target) ([]plan.SpireChange, error) {
	lane, done, err := e.spireLane(ctx, t)
	if err != nil {
		return nil, err
	}
	if lane == nil {
		return e.spireLeftovers(ctx, t)
	}
	defer done()
	return lane.PlanDestroy(ctx)
}

// destroySpire retires the group's entries, its allow list and kubeconfig on the spire node
// and the token-review account's rights.
func (e *Engine) destroySpire(ctx context.Context, t Target) error {
	lane, done, err := e.spireLane(ctx, t)
	if err != nil {
		return err
	}
	if lane == nil {
		return e.retireSpireLeftovers(ctx, t)
	}
	defer done()
	cs, err := lane.PlanDestroy(ctx)
	if err != nil {
		return fmt.Errorf("group %s: %w", t.Group.Name, err)
	}
	if len(cs) == 0 {
		return nil
	}
	e.emit(event.Event{Phase: event.PhaseDestroy, Message: fmt.Sprintf("spire: retire %d change(s) of cluster %s", len(cs), cs[0].Cluster)})
	if err := lane.Apply(ctx, cs); err != nil {
		return fmt.Errorf("group %s: %w", t.Group.Name, err)
	}
	return nil
}

// spireCluster is the cluster as the SPIRE lane reads it; ok false when the client cannot
// (a test's fake without the lane's calls).
func (e *Engine) spireCluster() (spire.Cluster, bool) {
	if e.o.SpireKube != nil {
		return e.o.SpireKube, true
	}
	kc, ok := e.o.Kube.(spire.Cluster)
	return kc, ok
}

// spireLeftovers are the deployment's token-review rights (ClusterRole and binding
// slipway:spire-server:<deployment>, labelled with it) when its file has no `spire:` any
// more: its account goes with the lane, and whoever made an account of that name in the
// namespace would hold the rights. The spire node and the server are not in the file any
// more: their parts stay, and docs/group-file.md says how to remove them.
func (e *Engine) spireLeftovers(ctx context.Context, t Target) ([]plan.SpireChange, error) {
	if t.Group.Spire != nil {
		return nil, nil
	}
	kc, ok := e.spireCluster()
	if !ok {
		return nil, nil
	}
	st, err := kc.SpireRBAC(ctx, t.Namespace, t.Group.Name)
	if err != nil {
		return nil, fmt.Errorf("group %s: spire: %w", t.Group.Name, err)
	}
	var out []plan.SpireChange
	name := kube.SpireRBACName(t.Group.Name)
	for _, x := range []struct {
		what  plan.SpireWhat
		state string
	}{{plan.SpireClusterRole, st.Role}, {plan.SpireRoleBinding, st.Binding}} {
		if x.state != "missing" && x.state != kube.RBACForeign {
			out = append(out, plan.SpireChange{What: x.what, Name: name, Action: plan.Delete,
				Reason: "the file has no spire: any more"})
		}
	}
	return out, nil
}

// retireSpireLeftovers deletes what spireLeftovers finds now (never what a plan file says).
func (e *Engine) retireSpireLeftovers(ctx context.Context, t Target) error {
	cs, err := e.spireLeftovers(ctx, t)
	if err != nil || len(cs) == 0 {
		return err
	}
	kc, _ := e.spireCluster()
	if err := kc.DeleteSpireRBAC(ctx, t.Group.Name); err != nil {
		return fmt.Errorf("group %s: spire: %w", t.Group.Name, err)
	}
	return nil
}
