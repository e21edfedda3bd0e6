package engine

import (
	"context"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"slipway.dev/slipway/internal/engine/central"
	"slipway.dev/slipway/internal/engine/lane"
	"slipway.dev/slipway/internal/engine/migrate"
	"slipway.dev/slipway/internal/engine/nsmove"
	"slipway.dev/slipway/internal/engine/publish"
	"slipway.dev/slipway/internal/engine/roles"
	"slipway.dev/slipway/internal/engine/rollout"
	"slipway.dev/slipway/internal/engine/secrets"
	"slipway.dev/slipway/internal/engine/spire"
	"slipway.dev/slipway/internal/kube"
	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/render"
	"slipway.dev/slipway/internal/state"
	"slipway.dev/slipway/internal/status"
)

// newLanes is the one list of the engine's lanes (internal/engine/lane). At each place of a
// verb the root calls the hook of every lane that has it, in this order (destroy's hooks in
// the reverse order: teardown undoes what the lanes made); a lane's steps run where
// plan.BuildSteps puts them. A new lane is its package and a line here.
func (e *Engine) newLanes() []lane.Lane {
	env := lane.Env{
		Emit:        e.emit,
		NewRecorder: func(s state.Store, d *state.Document) lane.Recorder { return newRecorder(s, d) },
		DeleteAll:   e.deleteAll,
		Apply: func(ctx context.Context, obj runtime.Object) (int64, error) {
			out, err := e.o.Kube.Apply(ctx, obj, kube.ApplyOptions{Force: true})
			if err != nil {
				return 0, err
			}
			return out.GetGeneration(), nil
		},
		PodLogTail: func(ctx context.Context, ns, pod, container string, n int64) string {
			return e.o.Kube.PodLogTail(ctx, ns, pod, container, n) // Kube is read when called: a test's may come late
		},
	}
	e.env = env
	migrations := migrate.New(env, e.o.Kube)
	// The rollout's part of a migration is the migrate lane's (rollout.Migrator): the root
	// hands one lane to the other, and neither imports the other.
	e.rollout = rollout.New(env, rollout.Options{Kube: e.o.Kube, Migrate: migrations, Parallelism: e.o.Parallelism, Limit: e.rolloutLimit})
	return []lane.Lane{
		e.rollout,
		secrets.New(secrets.Options{Parallelism: e.o.Parallelism, Connect: e.o.SecretsServer}),
		spire.New(env, spire.Options{Connect: e.o.SpireConnect, Kube: e.spireCluster()}),
		central.New(env),
		publish.New(env, e.o.Kube, e.o.DNS),
		nsmove.New(env, e.o.Kube),
		migrations,
		roles.New(env, e.o.Kube),
	}
}

// spireCluster is the cluster as the SPIRE lane reads it; nil when the client cannot (a
// test's fake without the lane's calls).
func (e *Engine) spireCluster() spire.Cluster {
	if e.o.SpireKube != nil {
		return e.o.SpireKube
	}
	kc, _ := e.o.Kube.(spire.Cluster)
	return kc
}

// laneSteps are the executors of the lanes' steps, by kind.
func laneSteps(lanes []lane.Lane) map[plan.StepKind]lane.Executor {
	out := map[plan.StepKind]lane.Executor{}
	for _, l := range lanes {
		if s, ok := l.(lane.Stepper); ok {
			for k, x := range s.Executors() {
				out[k] = x
			}
		}
	}
	return out
}

// eachLane calls f with every lane that has hook H, in the list's order, and stops at the
// first error.
func eachLane[H any](lanes []lane.Lane, f func(h H) error) error {
	for _, l := range lanes {
		if h, ok := l.(H); ok {
			if err := f(h); err != nil {
				return err
			}
		}
	}
	return nil
}

// prepare runs the lanes' first part of a plan, before render.
func (e *Engine) prepare(ctx context.Context, pr *lane.PlanRun) error {
	return eachLane(e.lanes, func(h lane.Preparer) error { return h.Prepare(ctx, pr) })
}

// render runs the lanes' part of render: what they add to its input (in), and once the
// objects are made (by build), what they read of them.
func (e *Engine) render(ctx context.Context, pr *lane.PlanRun, in render.Input, build func(render.Input) ([]render.Object, error)) ([]render.Object, error) {
	if err := eachLane(e.lanes, func(h lane.Renderer) error { return h.Render(ctx, pr, &in) }); err != nil {
		return nil, err
	}
	objs, err := build(in)
	if err != nil {
		return nil, err
	}
	return objs, eachLane(e.lanes, func(h lane.Renderer) error { return h.Rendered(ctx, pr, objs) })
}

// input runs the lanes' part of a plan's input, before plan.Compute.
func (e *Engine) input(ctx context.Context, pr *lane.PlanRun, in *plan.Input) error {
	return eachLane(e.lanes, func(h lane.Inputter) error { return h.Input(ctx, pr, in) })
}

// amend runs the lanes' part of a plan once it is computed.
func (e *Engine) amend(ctx context.Context, pr *lane.PlanRun, p *plan.Plan) error {
	return eachLane(e.lanes, func(h lane.Amender) error { return h.Amend(ctx, pr, p) })
}

// fill has each lane fill in p what the apply needs and the plan leaves out, before anything
// is read or changed.
func (e *Engine) fill(p *plan.Plan, t Target) (*plan.Plan, error) {
	err := eachLane(e.lanes, func(h lane.Starter) (err error) {
		p, err = h.Fill(p, t.lent())
		return err
	})
	return p, err
}

// start runs the lanes' start of an apply, before its first change.
func (e *Engine) start(ctx context.Context, p *plan.Plan, rec *recorder) error {
	return eachLane(e.lanes, func(h lane.Starter) error { return h.Start(ctx, p, rec) })
}

// finish runs the lanes' end of an apply.
func (e *Engine) finish(ctx context.Context, p *plan.Plan, rec *recorder, failed int) error {
	return eachLane(e.lanes, func(h lane.Finisher) error { return h.Finish(ctx, p, rec, failed) })
}

// teardown is the lanes in destroy's order: the list's, reversed.
func (e *Engine) teardown() []lane.Lane {
	out := slices.Clone(e.lanes)
	slices.Reverse(out)
	return out
}

// refuseDestroy asks each lane whether destroy may go on; nothing is changed yet.
func (e *Engine) refuseDestroy(t Target, doc *state.Document) error {
	return eachLane(e.teardown(), func(h lane.Destroyer) error { return h.Refuse(t.lent(), doc) })
}

// planDestroyLanes adds what destroy would remove of each lane to p (plan -destroy, which
// shows a destroy without --keep-claims).
func (e *Engine) planDestroyLanes(ctx context.Context, t Target, doc *state.Document, p *plan.Plan) error {
	lt := t.lent()
	lt.KeepClaims = false
	return eachLane(e.teardown(), func(h lane.DestroyPlanner) error { return h.PlanDestroy(ctx, lt, doc, p) })
}

// judgeLateLanes judges, before destroy changes anything, the part of each lane that goes
// once the objects are gone, and returns what removes them then, in order.
func (e *Engine) judgeLateLanes(ctx context.Context, t lane.Target, doc *state.Document) (func() error, error) {
	var afters []func() error
	err := eachLane(e.teardown(), func(h lane.LateDestroyer) error {
		after, err := h.DestroyLate(ctx, t, doc)
		afters = append(afters, after)
		return err
	})
	if err != nil {
		return nil, err
	}
	return func() error {
		for _, after := range afters {
			if err := after(); err != nil {
				return err
			}
		}
		return nil
	}, nil
}

// destroyLanes runs the lanes' part of destroy, before the group's objects go.
func (e *Engine) destroyLanes(ctx context.Context, t lane.Target, doc *state.Document) error {
	return eachLane(e.teardown(), func(h lane.Destroyer) error { return h.Destroy(ctx, t, doc) })
}

// suspendLanes runs the lanes' part of suspend, before the Deployments go to 0.
func (e *Engine) suspendLanes(ctx context.Context, t Target, rec *recorder) error {
	return eachLane(e.lanes, func(h lane.Suspender) error { return h.Suspend(ctx, t.lent(), rec) })
}

// resumeLanes runs the lanes' part of resume once node runs again.
func (e *Engine) resumeLanes(ctx context.Context, t Target, rec *recorder, node string) error {
	return eachLane(e.lanes, func(h lane.Suspender) error { return h.Resume(ctx, t.lent(), rec, node) })
}

// reportLanes adds what each lane knows to a status.
func (e *Engine) reportLanes(ctx context.Context, t Target, doc *state.Document, gs *status.Group) error {
	return eachLane(e.lanes, func(h lane.Reporter) error { return h.Status(ctx, t.lent(), doc, gs) })
}

// laneObjects lends the run's objects to the lanes' steps (lane.Objects).
type laneObjects struct{ s *objectSet }

func (o laneObjects) KeysOf(kind string) []plan.Key             { return o.s.keysOf(kind) }
func (o laneObjects) Get(k plan.Key) *unstructured.Unstructured { return o.s.get(k) }

// executor runs one kind of step for one node.
type executor func(e *Engine, ctx context.Context, nr *nodeRun, st plan.Step) error

// executors holds the executor of each step kind the root runs, each in the file of its part
// of the engine; a lane package's steps come from its Executors (lanes.go). A push runs
// before the nodes, apart.
var executors = map[plan.StepKind]executor{
	plan.StepPrune:      onRun((*Engine).prune),      // prune.go
	plan.StepRemoveNode: onRun((*Engine).removeNode), // prune.go
}

// onRun adapts an executor that needs only the run, not the node's share of it.
func onRun(f func(e *Engine, ctx context.Context, r *run, st plan.Step) error) executor {
	return func(e *Engine, ctx context.Context, nr *nodeRun, st plan.Step) error {
		return f(e, ctx, nr.run, st)
	}
}
