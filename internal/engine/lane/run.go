package lane

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"slipway.dev/slipway/internal/event"
	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/spec"
	"slipway.dev/slipway/internal/state"
)

// Env is what the engine lends a lane, instead of itself.
type Env struct {
	// Emit receives the lane's events, stamped with the time when they have none; safe for
	// concurrent use, never nil.
	Emit func(event.Event)
	// NewRecorder is a recorder of doc in store, for a verb that has none of its own
	// (destroy's part of a lane).
	NewRecorder func(store state.Store, doc *state.Document) Recorder
	// DeleteAll deletes changes (each of the UID judged) in reverse apply order and waits
	// until they are gone.
	DeleteAll func(ctx context.Context, changes []plan.Change) error
	// Apply applies obj server-side, owning its fields (Force), and returns the generation
	// the cluster gave it: a wait must see that generation before it trusts a status.
	Apply func(ctx context.Context, obj runtime.Object) (int64, error)
	// PodLogTail is a pod's container's last n log lines, "" when they cannot be read: what a
	// failure report shows (FailureReport).
	PodLogTail func(ctx context.Context, ns, pod, container string, n int64) string
}

// Recorder is the state of an apply, suspend or resume as a lane reads and changes it: the
// engine writes the document after every change, so a run killed at any point leaves a state
// the next run converges from.
type Recorder interface {
	// View runs f with the document, which f only reads, under the recorder's lock.
	View(f func(d *state.Document))
	// Update changes the document with f and writes it; when names the write in its error.
	// It returns once a written document holds the change.
	Update(ctx context.Context, when string, f func(d *state.Document)) error
}

// NodeOf returns node name's entry in d, made when missing.
func NodeOf(d *state.Document, name string) *state.NodeState {
	if d.Nodes == nil {
		d.Nodes = map[string]*state.NodeState{}
	}
	ns := d.Nodes[name]
	if ns == nil {
		ns = &state.NodeState{}
		d.Nodes[name] = ns
	}
	return ns
}

// PlanRun is what a plan read, as a lane's Amender reads it.
type PlanRun struct {
	Target Target
	Doc    *state.Document // the state, nil when none
	// Live are the group's objects in its namespace, typed for the built-in kinds; Namespace
	// the namespace itself, nil when it is not there.
	Live      map[plan.Key]plan.Object
	Namespace *unstructured.Unstructured
	// Notes are what the Preparers say for the operator, in the plan's notes after the
	// cluster's own (stop signal, monitors).
	Notes []string
	Slots
	done []func()
}

// Defer has f run once the plan is made or has failed (Close): what a lane's hooks of one
// plan share, such as its connections, is closed then.
func (pr *PlanRun) Defer(f func()) { pr.done = append(pr.done, f) }

// Close runs what the hooks deferred, the last first; the root calls it when a plan ends.
func (pr *PlanRun) Close() {
	for i := len(pr.done) - 1; i >= 0; i-- {
		pr.done[i]()
	}
	pr.done = nil
}

// Objects are the plan's objects as an apply's steps read them: the root takes them out of the
// plan before any step runs, and drops a node's once its steps ran.
type Objects interface {
	// KeysOf are the keys of the objects of kind still held, sorted.
	KeysOf(kind string) []plan.Key
	// Get is the object of k (one the plan found unchanged converted from its stub); nil
	// when there is none.
	Get(k plan.Key) *unstructured.Unstructured
}

// NodeRun is one node's steps in progress (Node nil for a step of the run): the plan, the
// target, the state and what a step hands on to a later one, in its slots.
type NodeRun struct {
	Plan   *plan.Plan
	Target Target
	Rec    Recorder
	Node   *spec.Node
	// Watch is the apply's cache of the namespace's Deployments; nil for the steps before the
	// nodes' (the namespace).
	Watch DeploymentWatch
	// Object is the plan's object of k, nil when it has none; Change is the plan's change of
	// k, nil when k is unchanged.
	Object func(k plan.Key) *unstructured.Unstructured
	Change func(k plan.Key) *plan.Change
	// Objects are the plan's objects (nil in a test's run without them).
	Objects Objects
	Slots
}

// Key is a lane's slot in a NodeRun or PlanRun: data one step (or hook) hands a later one.
// Each lane declares its keys as package variables; two keys never share a slot.
type Key[T any] struct{ name string }

// NewKey returns a key; name says what the slot holds, in errors.
func NewKey[T any](name string) *Key[T] { return &Key[T]{name: name} }

func (k *Key[T]) String() string { return k.name }

// Slots holds the values of keys. A node's steps run one after the other, so a NodeRun's
// slots need no lock.
type Slots struct{ m map[any]any }

// Get is the value of k in s, the zero value when none was set.
func Get[T any](s *Slots, k *Key[T]) T {
	v, _ := s.m[k].(T)
	return v
}

// Set puts v in k's slot of s.
func Set[T any](s *Slots, k *Key[T], v T) {
	if s.m == nil {
		s.m = map[any]any{}
	}
	s.m[k] = v
}
