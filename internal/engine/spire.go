package engine

import (
	"context"
	"fmt"
	"os"
	"slices"

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

// planSpire is the lane's plan, its entries bound to the pods render made (desired), after
// the retirement of what the state records of another place (another namespace or server).
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
	doc, err := readAnyNamespace(ctx, t)
	if err != nil {
		return nil, err
	}
	rs, done, err := e.planRetirements(ctx, t, spireRetired(doc, t), true)
	if err != nil {
		return nil, err
	}
	defer done()
	p.Changes = append(retiredChanges(rs), p.Changes...)
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

// applySpire runs a spire step: what the state records of another place retired, then the
// server and the spire node made ready before any node, the record written before. The
// step's changes are never run as they are (a saved plan is a file anyone may edit): the
// lane plans again from the validated group file and the state, and refuses when they differ.
func (e *Engine) applySpire(ctx context.Context, r *run, st plan.Step) error {
	r.rec.mu.Lock()
	recs := spireRetired(r.rec.doc, r.t)
	r.rec.mu.Unlock()
	rs, doneRetire, err := e.planRetirements(ctx, r.t, recs, r.t.Group.Spire != nil)
	if err != nil {
		return err
	}
	defer doneRetire()
	now := retiredChanges(rs)
	lane, done, err := e.spireLane(ctx, r.t)
	if err != nil {
		return err
	}
	defer done()
	var planned *spire.Planned
	var rights []plan.SpireChange
	switch {
	case lane != nil:
		if lane.PodLabels, err = spirePodLabels(r.objs); err != nil {
			return fmt.Errorf("group %s: spire: %w", r.t.Group.Name, err)
		}
		if planned, err = lane.Plan(ctx); err != nil {
			return fmt.Errorf("group %s: %w", r.t.Group.Name, err)
		}
		now = append(now, planned.Changes...)
	case len(recs) == 0:
		// A deployment the state records no place of (applied before slipway recorded
		// them): its rights alone are found again.
		if rights, err = e.rightsLeftovers(ctx, r.t); err != nil {
			return err
		}
		now = append(now, rights...)
	}
	if err := spire.CheckSaved(st.Spire, now); err != nil {
		return fmt.Errorf("group %s: %w", r.t.Group.Name, err)
	}
	e.emit(event.Event{Phase: event.PhaseApply, Message: st.String()})
	if err := e.retire(ctx, r.t, rs, r.rec); err != nil {
		return err
	}
	if lane == nil {
		return e.retireRights(ctx, r.t, rights)
	}
	if err := r.rec.recordSpire(ctx, r.t); err != nil {
		return err
	}
	if err := lane.Apply(ctx, planned.Changes); err != nil {
		return fmt.Errorf("group %s: %w", r.t.Group.Name, err)
	}
	return nil
}

// spireTeardown is what destroy retires of the lane: what the state records (every place but
// the file's), the file's lane, and without either the rights found again.
type spireTeardown struct {
	rs     []retirement
	lane   *spire.Lane
	cs     []plan.SpireChange // the file's lane's
	rights []plan.SpireChange
	done   func()
}

func (d *spireTeardown) changes() []plan.SpireChange {
	return append(append(retiredChanges(d.rs), d.cs...), d.rights...)
}

func (e *Engine) spireTeardown(ctx context.Context, t Target) (*spireTeardown, error) {
	doc, err := readAnyNamespace(ctx, t)
	if err != nil {
		return nil, err
	}
	recs := spireRetired(doc, t)
	lane, done, err := e.spireLane(ctx, t)
	if err != nil {
		return nil, err
	}
	d := &spireTeardown{lane: lane, done: done}
	if lane != nil {
		if d.cs, err = lane.PlanDestroy(ctx); err != nil {
			done()
			return nil, fmt.Errorf("group %s: %w", t.Group.Name, err)
		}
	}
	rs, doneRetire, err := e.planRetirements(ctx, t, recs, lane != nil)
	if err != nil {
		done()
		return nil, err
	}
	d.rs, d.done = rs, func() { doneRetire(); done() }
	if lane == nil && len(recs) == 0 {
		if d.rights, err = e.rightsLeftovers(ctx, t); err != nil {
			d.done()
			return nil, err
		}
	}
	return d, nil
}

// planDestroySpire is what destroy retires of the lane (spireTeardown).
func (e *Engine) planDestroySpire(ctx context.Context, t Target) ([]plan.SpireChange, error) {
	d, err := e.spireTeardown(ctx, t)
	if err != nil {
		return nil, err
	}
	defer d.done()
	return d.changes(), nil
}

// destroySpire retires the deployment's entries, its allow lists and kubeconfigs on the
// spire nodes and the token-review account's rights: where the file's `spire:` made them and
// where the state records it made them before.
func (e *Engine) destroySpire(ctx context.Context, t Target) error {
	d, err := e.spireTeardown(ctx, t)
	if err != nil {
		return err
	}
	defer d.done()
	cs := d.changes()
	if len(cs) == 0 {
		return nil
	}
	e.emit(event.Event{Phase: event.PhaseDestroy, Message: fmt.Sprintf("spire: retire %d change(s)", len(cs))})
	if err := e.retire(ctx, t, d.rs, nil); err != nil {
		return err
	}
	if d.lane != nil {
		if err := d.lane.Apply(ctx, d.cs); err != nil {
			return fmt.Errorf("group %s: %w", t.Group.Name, err)
		}
		return nil
	}
	return e.retireRights(ctx, t, d.rights)
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

// spireLeftovers is what a plan retires of the lane when the file has no `spire:`: what the
// state records of it (spireRetired), or, when it records nothing (a deployment applied
// before slipway recorded it), the rights alone, found again.
func (e *Engine) spireLeftovers(ctx context.Context, t Target) ([]plan.SpireChange, error) {
	if t.Group.Spire != nil {
		return nil, nil
	}
	doc, err := readAnyNamespace(ctx, t)
	if err != nil {
		return nil, err
	}
	if recs := spireRetired(doc, t); len(recs) > 0 {
		rs, done, err := e.planRetirements(ctx, t, recs, false)
		if err != nil {
			return nil, err
		}
		defer done()
		return retiredChanges(rs), nil
	}
	return e.rightsLeftovers(ctx, t)
}

// rightsLeftovers are the deployment's token-review rights (ClusterRole and binding
// slipway:spire-server:<deployment>, labelled with it) when its file has no `spire:` and
// the state records no place of its lane: its account goes with the lane, and whoever made
// an account of that name in the namespace would hold the rights.
func (e *Engine) rightsLeftovers(ctx context.Context, t Target) ([]plan.SpireChange, error) {
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

// retireRights deletes the rights when cs (found again now, never read from a plan file)
// name any.
func (e *Engine) retireRights(ctx context.Context, t Target, cs []plan.SpireChange) error {
	if !slices.ContainsFunc(cs, isRights) {
		return nil
	}
	kc, _ := e.spireCluster()
	if err := kc.DeleteSpireRBAC(ctx, t.Group.Name); err != nil {
		return fmt.Errorf("group %s: spire: %w", t.Group.Name, err)
	}
	return nil
}
