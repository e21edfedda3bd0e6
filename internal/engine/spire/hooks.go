package spire

import (
	"context"
	"fmt"
	"os"

	appsv1 "k8s.io/api/apps/v1"

	"slipway.dev/slipway/internal/engine/lane"
	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/render"
	"slipway.dev/slipway/internal/spec"
	"slipway.dev/slipway/internal/state"
)

// Hooks is the SPIRE lane as the engine runs it (internal/engine/lane): where Lane is one
// deployment's part against one server and spire node, Hooks opens the Lane of the file's
// `spire:` (and those of the places the state records, to retire them) at each place of a
// verb: render's part of a plan and the lane's plan after it, the step `spire` before any
// node, its part of destroy.
type Hooks struct {
	env     lane.Env
	connect Connector
	kube    Cluster
}

// Connector makes the lane's connections to the server and the spire node.
type Connector func(ctx context.Context, s *spec.Spire) (*Conn, error)

// Options configure Hooks.
type Options struct {
	// Connect is Connect unless a test gives its own.
	Connect Connector
	// Kube is the cluster as the lane reads it; nil when the engine's client cannot do what
	// the lane needs (a test's fake without the lane's calls).
	Kube Cluster
}

// New returns the lane's hooks.
func New(env lane.Env, o Options) *Hooks {
	if o.Connect == nil {
		o.Connect = Connect
	}
	return &Hooks{env: env, connect: o.Connect, kube: o.Kube}
}

// Name names the lane.
func (h *Hooks) Name() string { return "spire" }

// The plan's slots: the file's lane, open from Render until the plan ends, and its plan.
var (
	openKey    = lane.NewKey[*Lane]("the file's SPIRE lane")
	plannedKey = lane.NewKey[*Planned]("the SPIRE lane's plan")
)

// Executors are the lane's step.
func (h *Hooks) Executors() map[plan.StepKind]lane.Executor {
	return map[plan.StepKind]lane.Executor{plan.StepSpire: h.applyStep} // step.go
}

// Render opens the lane of the file's `spire:` and gives render what it needs of it (the
// cluster's name on the server, the server's trust bundle); the lane stays open until the
// plan ends.
func (h *Hooks) Render(ctx context.Context, pr *lane.PlanRun, in *render.Input) error {
	sl, done, rs, err := h.start(ctx, pr.Target)
	if err != nil {
		return err
	}
	pr.Defer(done)
	lane.Set(&pr.Slots, openKey, sl)
	in.Spire = rs
	return nil
}

// Rendered plans the lane, its entries bound to the pods render made, after the retirement of
// what the state records of another place (another namespace or server).
func (h *Hooks) Rendered(ctx context.Context, pr *lane.PlanRun, objs []render.Object) error {
	sl := lane.Get(&pr.Slots, openKey)
	if sl == nil {
		return nil
	}
	sl.PodLabels = map[string]string{}
	for _, o := range objs {
		if d, ok := o.(*appsv1.Deployment); ok && d.Spec.Template.Labels[spec.LabelRole] == "" {
			if v := d.Spec.Template.Labels[spec.LabelSpirePod]; v != "" {
				sl.PodLabels[d.Spec.Template.Labels[spec.LabelNode]] = v
			}
		}
	}
	p, err := sl.Plan(ctx)
	if err != nil {
		return fmt.Errorf("group %s: %w", pr.Target.Group.Name, err)
	}
	rs, done, err := h.planRetirements(ctx, pr.Target, retiredPlaces(pr.Doc, pr.Target), true)
	if err != nil {
		return err
	}
	defer done()
	p.Changes = append(retiredChanges(rs), p.Changes...)
	lane.Set(&pr.Slots, plannedKey, p)
	return nil
}

// Amend puts the lane's changes and notes into p: the file's lane's plan, or without `spire:`
// what is left of the lane (leftovers).
func (h *Hooks) Amend(ctx context.Context, pr *lane.PlanRun, p *plan.Plan) error {
	if sp := lane.Get(&pr.Slots, plannedKey); sp != nil {
		p.Spire, p.Notes = sp.Changes, append(p.Notes, sp.Notes...)
		return nil
	}
	var err error
	p.Spire, err = h.leftovers(ctx, pr.Target, pr.Doc)
	return err
}

// PlanDestroy is what destroy retires of the lane (teardown).
func (h *Hooks) PlanDestroy(ctx context.Context, t lane.Target, doc *state.Document, p *plan.Plan) error {
	d, err := h.teardown(ctx, t, doc)
	if err != nil {
		return err
	}
	defer d.done()
	p.Spire = d.changes()
	return nil
}

// Refuse lets every destroy go on: the lane retires what it finds.
func (h *Hooks) Refuse(lane.Target, *state.Document) error { return nil }

// Destroy retires the deployment's entries, its allow lists and kubeconfigs on the spire
// nodes and the token-review account's rights (destroy in leftovers.go).
func (h *Hooks) Destroy(ctx context.Context, t lane.Target, doc *state.Document) error {
	return h.destroy(ctx, t, doc)
}

// cluster is the cluster as the lane reads it; ok false when the engine's client cannot.
func (h *Hooks) cluster() (Cluster, bool) { return h.kube, h.kube != nil }

// open is the lane of t, nil without `spire:`; done closes its connections.
func (h *Hooks) open(ctx context.Context, t lane.Target) (sl *Lane, done func(), err error) {
	s := t.Group.Spire
	if s == nil {
		return nil, func() {}, nil
	}
	kc, ok := h.cluster()
	if !ok {
		return nil, nil, fmt.Errorf("group %s: spire: the cluster client cannot do what the SPIRE lane needs", t.Group.Name)
	}
	c, err := h.connect(ctx, s)
	if err != nil {
		return nil, nil, fmt.Errorf("group %s: %w", t.Group.Name, err)
	}
	nodes := make([]string, len(t.Group.Nodes))
	for i, n := range t.Group.Nodes {
		nodes[i] = n.Name
	}
	return &Lane{Spire: s, Group: t.Group.Name, Namespace: t.Namespace, Nodes: nodes,
		Server: c.Server, Node: c.Node, Kube: kc, APIServer: os.Getenv(spec.EnvSpireAPIServer)}, c.Close, nil
}

// start opens the lane of t and reads what render needs of it (nil without `spire:`); done
// closes the lane.
func (h *Hooks) start(ctx context.Context, t lane.Target) (sl *Lane, done func(), rs *render.Spire, err error) {
	sl, done, err = h.open(ctx, t)
	if err != nil || sl == nil {
		return nil, func() {}, nil, err
	}
	cluster, bundle, err := sl.Read(ctx)
	if err != nil {
		done()
		return nil, func() {}, nil, fmt.Errorf("group %s: %w", t.Group.Name, err)
	}
	return sl, done, &render.Spire{Cluster: cluster, Bundle: bundle}, nil
}

var (
	_ lane.Stepper        = (*Hooks)(nil)
	_ lane.Renderer       = (*Hooks)(nil)
	_ lane.Amender        = (*Hooks)(nil)
	_ lane.DestroyPlanner = (*Hooks)(nil)
	_ lane.Destroyer      = (*Hooks)(nil)
)
