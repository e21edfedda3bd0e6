package engine

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"runtime/debug"
	"slices"
	"strings"
	"sync"

	"slipway.dev/slipway/internal/engine/lane"
	"slipway.dev/slipway/internal/event"
	"slipway.dev/slipway/internal/parallel"
	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/spec"
	"slipway.dev/slipway/internal/state"
)

// NodeError is a node that failed; Apply returns them joined, so every failure is reported.
type NodeError struct {
	Node string
	Err  error
}

func (e *NodeError) Error() string { return "node " + e.Node + ": " + e.Err.Error() }
func (e *NodeError) Unwrap() error { return e.Err }

// failures are the nodes that failed in a run, safe for concurrent use.
type failures struct {
	mu sync.Mutex
	m  map[string]error
}

func (f *failures) add(node string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.m[node] = errors.Join(f.m[node], err)
}

// set records err as node's failure.
func (f *failures) set(node string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.m[node] = err
}

func (f *failures) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.m)
}

func (f *failures) get(node string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.m[node]
}

// err joins every NodeError, sorted by node.
func (f *failures) err() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	var errs []error
	for _, n := range slices.Sorted(maps.Keys(f.m)) {
		errs = append(errs, &NodeError{Node: n, Err: f.m[n]})
	}
	return errors.Join(errs...)
}

// run is what the step executors of one apply share.
type run struct {
	p    *plan.Plan
	t    Target
	rec  *recorder
	w    lane.DeploymentWatch
	objs *objectSet
	// ix indexes p: a lookup per object must not scan every change (5,000 of them at 1,000
	// nodes).
	ix *plan.Index
}

// change returns the plan's change of k, nil when k is unchanged.
func (r *run) change(k plan.Key) *plan.Change { return r.ix.Change(k) }

// nodeRun is one node's steps in progress (node nil for a step of the run): ln is what a
// lane's executor sees of it, and its slots what a step hands on to a later one.
type nodeRun struct {
	*run
	node *spec.Node
	ln   *lane.NodeRun
}

// newNodeRun starts the steps of node (nil: the steps of the run).
func newNodeRun(r *run, node *spec.Node) *nodeRun {
	ln := &lane.NodeRun{Plan: r.p, Target: r.t.lent(), Rec: r.rec, Node: node, Watch: r.w, Object: r.objs.get, Change: r.change}
	if r.objs != nil {
		ln.Objects = laneObjects{r.objs}
	}
	return &nodeRun{run: r, node: node, ln: ln}
}

// Apply carries out p (SPEC §6) by running its steps (plan.BuildSteps): the pushes, in the
// background; once one image is pushed, the group's objects; then each node's steps in order,
// Parallelism nodes at a time, each once its own images are pushed; then the nodes that left
// the group. A failed node does not stop the others. The error joins every NodeError.
//
// Apply takes the plan's objects: p.Desired is nil once it has begun, and each node's objects
// are dropped when its steps are done, so that memory follows the nodes still to go.
func (e *Engine) Apply(ctx context.Context, p *plan.Plan, t Target) error {
	given := p
	p, err := e.fill(p, t) // before any change: a missing Secret value stops it all
	if err != nil {
		return err
	}
	objs := newObjectSet(p.Desired, p.Deferred)
	given.Desired, p.Desired, given.Deferred, p.Deferred = nil, nil, nil, nil
	rec, err := e.startApply(ctx, p, t)
	if err != nil || rec == nil {
		return err
	}
	// Built again rather than read from a saved plan: the limits are this run's (--timeout).
	steps := plan.BuildSteps(p, t.Group, e.rolloutLimit)
	failed := &failures{m: e.blockedNodes(p)}
	pushes := e.startPushes(ctx, p, steps, failed)
	defer func() { <-pushes.all }() // no push outlives the apply
	// The cluster changes once one image is in the registry: with every push failing, it is
	// left as it was.
	<-pushes.first
	select {
	case <-pushes.all:
		if n := failed.count(); n > 0 && n >= len(t.Group.Nodes) {
			return failed.err()
		}
	default: // one push is done: the others go on beside the cluster's changes
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("apply interrupted before any change to the cluster: %w", err)
	}
	rec.mu.Lock()
	rec.doc.Namespace = p.Namespace
	if p.Move != nil {
		rec.doc.MovedFrom = p.Move.From // until its objects there are gone (nsmove)
	}
	rec.mu.Unlock()

	r := &run{p: p, t: t, rec: rec, objs: objs, ix: p.Index()}
	// The namespace and default-deny, before any Deployment (FR-010).
	for _, st := range steps.Before {
		if err := e.runStep(ctx, newNodeRun(r, nil), st); err != nil {
			return err
		}
	}
	defer gcWhileRollingOut()()
	if r.w, err = e.o.Kube.Watch(ctx, p.Namespace); err != nil {
		return err
	}
	defer r.w.Stop()
	e.runNodes(ctx, r, steps.Nodes, pushes, failed)
	parallel.ForEach(e.o.Parallelism, steps.After, func(st plan.Step) {
		if ctx.Err() != nil {
			return
		}
		if err := e.runStep(ctx, newNodeRun(r, nil), st); err != nil {
			failed.set(st.Node, err)
		}
	})
	if err := ctx.Err(); err != nil && len(failed.m) == 0 {
		return fmt.Errorf("apply interrupted: %w", err)
	}
	if err := e.finish(ctx, p, rec, failed.count()); err != nil {
		return errors.Join(failed.err(), err)
	}
	return failed.err()
}

// startApply reads the state and refuses a stale or blocked plan. A plan without changes only
// records what the cluster holds, when the state lags it, and returns a nil recorder.
func (e *Engine) startApply(ctx context.Context, p *plan.Plan, t Target) (*recorder, error) {
	t, err := e.adopt(ctx, t) // as the plan read it: the state of an earlier release made the deployment's
	if err != nil {
		return nil, err
	}
	doc, err := readState(ctx, t)
	if err != nil {
		return nil, err
	}
	if doc == nil {
		doc = &state.Document{Group: p.Group}
	}
	if err := checkSerial(p, doc); err != nil {
		return nil, err
	}
	// Objects slipway did not make, or a namespace being deleted: nothing is changed at all.
	if err := p.Blocked(); err != nil {
		return nil, err
	}
	rec := newRecorder(t.Store, doc)
	if p.HasChanges() {
		// Before any Secret or template hashed with a new key reaches the cluster.
		return rec, e.start(ctx, p, rec)
	}
	if stateLags(doc, p, t) {
		// The cluster is right; only the state lags (a first run that was killed after its
		// last apply, say): record it without touching the cluster.
		if err := rec.Update(ctx, "of a cluster that needs no change", func(d *state.Document) { e.recordAll(d, p, t) }); err != nil {
			return nil, err
		}
	}
	e.emit(event.Event{Phase: event.PhaseUnchanged, Message: "No changes."})
	return nil, nil
}

// stateLags reports whether the state differs from what p says the cluster holds: namespace,
// nodes, machine IDs or images.
func stateLags(doc *state.Document, p *plan.Plan, t Target) bool {
	if doc.Namespace != p.Namespace || stateImagesLag(doc, p, t) {
		return true
	}
	for _, n := range t.Group.Nodes {
		if s := doc.Nodes[n.Name]; s == nil || s.MachineID != p.MachineIDs[n.Name] || s.Protect != n.State.Protect {
			return true
		}
	}
	for name := range doc.Nodes {
		if t.Group.Node(name) == nil {
			return true
		}
	}
	return false
}

// runNodes runs the steps of every node not failed yet: the nodes deployed for the first time
// NewNodes at a time, the others Parallelism at a time, both at once.
func (e *Engine) runNodes(ctx context.Context, r *run, nodes []plan.NodeSteps, pushes *pushRun, failed *failures) {
	var todo []plan.NodeSteps
	for _, ns := range nodes {
		if failed.get(ns.Node) == nil {
			todo = append(todo, ns)
		}
	}
	fresh, todo := splitNew(r, todo)
	var wg sync.WaitGroup
	wg.Go(func() { e.runNodesOf(ctx, r, fresh, max(e.o.NewNodes, e.o.Parallelism), pushes, failed) })
	e.runNodesOf(ctx, r, todo, e.o.Parallelism, pushes, failed)
	wg.Wait()
}

// splitNew splits nodes into those deployed for the first time (their Deployment is a create)
// and the others.
func splitNew(r *run, nodes []plan.NodeSteps) (fresh, others []plan.NodeSteps) {
	for _, ns := range nodes {
		k := plan.Key{Kind: "Deployment", Namespace: r.p.Namespace, Name: ns.Node}
		if c := r.change(k); c != nil && c.Action == plan.Create {
			fresh = append(fresh, ns)
		} else {
			others = append(others, ns)
		}
	}
	return fresh, others
}

// runNodesOf runs the steps of nodes, parallelism at a time, each once its pushes are done.
func (e *Engine) runNodesOf(ctx context.Context, r *run, nodes []plan.NodeSteps, parallelism int, pushes *pushRun, failed *failures) {
	parallel.ForEach(parallelism, nodes, func(ns plan.NodeSteps) {
		pushes.wait(ctx, ns.Node)
		if failed.get(ns.Node) != nil {
			return // its push failed, and said so: nothing of it changes
		}
		if ctx.Err() != nil {
			// Interrupted: nodes not started stay as they are; the next apply converges.
			failed.set(ns.Node, fmt.Errorf("not started: %w", ctx.Err()))
			return
		}
		err := e.runNode(ctx, r, ns)
		r.objs.release(ns.Node)
		if err != nil {
			failed.set(ns.Node, err)
			e.emit(event.Event{Node: ns.Node, Phase: event.PhaseFailed, Message: err.Error()})
		}
	})
}

// runNode runs one node's steps in order (SPEC §6 steps 2–8; its pushes are done), and
// records the node in the state after its objects and at its end.
func (e *Engine) runNode(ctx context.Context, r *run, ns plan.NodeSteps) error {
	nr := newNodeRun(r, r.t.Group.Node(ns.Node))
	if np := r.ix.Node(ns.Node); np == nil || len(np.Changes) == 0 && len(np.Records) == 0 && np.RemoveCopy == nil {
		e.emit(event.Event{Node: ns.Node, Phase: event.PhaseUnchanged, Ready: 1, Desired: 1})
		return e.recordNodeStep(ctx, r, nr.node, "for the unchanged objects")
	}
	steps := slices.DeleteFunc(slices.Clone(ns.Steps), func(st plan.Step) bool { return st.Kind == plan.StepPush })
	e.emit(event.Event{Node: ns.Node, Phase: event.PhaseApply, Message: "policies, account, claim, services"})
	if len(steps) > 0 && steps[0].Kind == plan.StepApplyObjects {
		if err := e.runStep(ctx, nr, steps[0]); err != nil {
			return err
		}
		steps = steps[1:]
	}
	if err := e.recordNodeStep(ctx, r, nr.node, "after the policies, account, claim and services"); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("interrupted after its policies and claim: %w", err)
	}
	for i, st := range steps {
		// A stop asked ends the run between steps, never between a Deployment's apply and
		// the wait for its rollout (issue 35 item 14), and says what it left undone.
		if err := ctx.Err(); err != nil && st.Kind != plan.StepAwaitRollout {
			return stoppedBefore(steps[i:], err)
		}
		if err := e.runStep(ctx, nr, st); err != nil {
			return err
		}
	}
	if err := e.recordNodeStep(ctx, r, nr.node, "after the roles and removals"); err != nil {
		return err
	}
	e.emit(event.Event{Node: ns.Node, Phase: event.PhaseDone, Ready: 1, Desired: 1})
	return nil
}

// runStep runs one step with the executor of its kind.
func (e *Engine) runStep(ctx context.Context, nr *nodeRun, st plan.Step) error {
	if x, ok := e.steps[st.Kind]; ok {
		return x(ctx, nr.ln, st)
	}
	x, ok := executors[st.Kind]
	if !ok {
		return fmt.Errorf("step %s of node %s: no executor for it here", st.Kind, st.Node)
	}
	return x(e, ctx, nr, st)
}

// stoppedBefore is the error of a node whose run a stop ended before steps: each named, as
// plan prints it, for the next apply to do.
func stoppedBefore(steps []plan.Step, err error) error {
	names := make([]string, len(steps))
	for i, st := range steps {
		names[i] = st.String()
	}
	return fmt.Errorf("stopped before %d of its steps, which the next apply does: %s: %w", len(steps), strings.Join(names, "; "), err)
}

// rolloutGCPercent is the garbage collector's target while an apply's nodes roll out: the
// heap may grow by half of what is live before a collection, not by all of it (GOGC 100).
//
// Measured (issue 17, BENCHMARKS.md): at the peak of a 1,000-node first apply 72 MB of heap
// was in use (the rendered objects, the watch caches) while the process held 207 MiB: the
// rest was the collector's headroom, taken while the apply mostly waits on the cluster. A
// plan or a no-op apply never gets here; their peak is what they hold, and GOGC 50 made a
// 1,000-node plan slower (1.38-1.40 s against 1.26-1.32 s) for 0-7 MB less.
const rolloutGCPercent = 50

// gcWhileRollingOut sets the collector's target for the rollouts and returns what sets it
// back; GOGC set by the operator is left alone.
func gcWhileRollingOut() (restore func()) {
	if os.Getenv("GOGC") != "" {
		return func() {}
	}
	old := debug.SetGCPercent(rolloutGCPercent)
	return func() { debug.SetGCPercent(old) }
}
