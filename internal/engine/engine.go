// Package engine runs slipway's verbs against a cluster: it plans (render + state + live
// objects + dry runs), applies a plan node by node in the order of SPEC §6 (images, policies,
// accounts, claims, Services, roles stopped, Deployment, rollout watched, rolled back on
// failure, roles started, leftovers pruned), destroys, suspends and resumes. It never prints:
// it emits Events that internal/ui renders. It assumes the caller holds the group's state lock
// for every verb that changes something.
package engine

import (
	"context"
	"sync"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"slipway.dev/slipway/internal/engine/lane"
	"slipway.dev/slipway/internal/engine/publish"
	"slipway.dev/slipway/internal/engine/rollout"
	"slipway.dev/slipway/internal/engine/secrets"
	"slipway.dev/slipway/internal/engine/spire"
	"slipway.dev/slipway/internal/event"
	"slipway.dev/slipway/internal/image"
	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/spec"
	"slipway.dev/slipway/internal/state"
)

// Options configure an Engine.
type Options struct {
	Kube      Cluster
	Builder   image.Builder
	Publisher image.Publisher
	// Registry is where node images go (K8S_REGISTRY).
	Registry string
	// Parallelism bounds the nodes handled at a time.
	Parallelism int
	// NewNodes, when more than Parallelism, bounds instead the nodes deployed for the first
	// time (their Deployment is created) and the pushes. Such a node has no rollout to set
	// back and no running pod to protect, so pacing its wait only spreads the cluster's own
	// work over more time: a first apply of 200 nodes 10 at a time took 1.3 × what the
	// cluster needs for the same objects (issue 17). Updates stay Parallelism at a time, and
	// so do the object applies themselves: 200 Services created at once contend for the
	// cluster's IP and port allocators until the API server times them out.
	NewNodes int
	// Pushes, when set, bounds the images pushed at a time; else max(NewNodes, Parallelism).
	// A node's objects go as soon as its own images are pushed, so fewer pushes at a time
	// than new nodes let the first nodes' objects reach the cluster while the others push.
	Pushes int
	// Timeout, when set, overrides every node's rolloutTimeout (--timeout).
	Timeout time.Duration
	// Emit receives events; it must be safe for concurrent use. nil discards them.
	Emit func(event.Event)
	// DNS is the server of SPEC §7; nil: made from the group's publish: when it has one.
	DNS publish.Server
	// SecretsServer makes the client plan checks a node's secrets server with (FR-004e); nil:
	// OpenBao's client with the token of SLIPWAY_OPENBAO_TOKEN(_FILE).
	SecretsServer func(ctx context.Context, s *spec.SecretsServer) (secrets.Server, error)
	// SpireConnect and SpireKube are the SPIRE lane's server, spire node and cluster
	// (internal/engine/spire); nil: spire.Connect and Kube.
	SpireConnect spire.Connector
	SpireKube    spire.Cluster
}

// Engine runs verbs for one group.
type Engine struct {
	o Options

	mu     sync.Mutex
	images map[string]v1.Image // built during Plan by image name, pushed during Apply
	labels stateLabels         // the node images' state version labels, read during Plan
	stop   stopSignalCheck
	// lanes are the lanes (lanes.go), steps the executors of their steps; env is what the
	// root lends them.
	lanes   []lane.Lane
	env     lane.Env
	rollout *rollout.Lane // resume follows a rollout as apply does (scale.go)
	steps   map[plan.StepKind]lane.Executor
}

// New returns an Engine.
func New(o Options) *Engine {
	if o.Parallelism < 1 {
		o.Parallelism = 1
	}
	if o.Emit == nil {
		o.Emit = func(event.Event) {}
	}
	e := &Engine{o: o, images: map[string]v1.Image{}}
	e.lanes = e.newLanes()
	e.steps = laneSteps(e.lanes)
	return e
}

func (e *Engine) emit(ev event.Event) {
	if ev.Time.IsZero() {
		ev.Time = time.Now()
	}
	e.o.Emit(ev)
}

// Target is the group a verb works on.
type Target struct {
	Group     *spec.Group
	Namespace string
	// Jobs are the group's images: one per node (Name = node) and per service role
	// (Name = <node>-<role>).
	Jobs []image.Job
	// Store holds the group's state; the caller holds its lock for changing verbs.
	Store state.Store
	// KeepClaims is apply --keep-claims: the claims of nodes the plan removes stay
	// (plan.KeepClaims).
	KeepClaims bool
	// NamespaceFrom says where Namespace came from ("-n", "K8S_NAMESPACE", …), for the
	// refusal of a namespace other than the state's; MoveNamespace is --move-namespace: the
	// run moves the group there instead (issue 35 item 6).
	NamespaceFrom string
	MoveNamespace bool
	// Legacy is the state backend of the key an earlier release gave a per-app target
	// (Identity.LegacyKey) when that is another state than Store's; nil otherwise. A state
	// there written for this target is adopted (adopt.go).
	Legacy state.Backend
	// adopt is the adoption a plan reads the cluster and the state through (adopting).
	adopt *adoption
}

// lent is t as the lanes see it (internal/engine/lane): without the adoption, which the root
// alone reads through.
func (t Target) lent() lane.Target {
	lt := lane.Target{Group: t.Group, Namespace: t.Namespace, Jobs: t.Jobs, Store: t.Store, KeepClaims: t.KeepClaims,
		NamespaceFrom: t.NamespaceFrom, MoveNamespace: t.MoveNamespace}
	if t.adopt != nil {
		lt.Adopts = t.adopt.from
		if t.Store != nil {
			lt.Store = adoptingStore{Store: t.Store, doc: t.adopt.adoptedDoc(t.Group.Name)}
		}
	}
	return lt
}

// NamespaceError refuses a run whose namespace is not the one the group's state records.
type NamespaceError = lane.NamespaceError

// rolloutLimit is the node's time limit: --timeout, else its rolloutTimeout, else the default
// the file would have given it.
func (e *Engine) rolloutLimit(n *spec.Node) time.Duration {
	switch {
	case e.o.Timeout > 0:
		return e.o.Timeout
	case n != nil && n.RolloutTimeout > 0:
		return n.RolloutTimeout
	}
	return spec.DefaultRolloutTimeout
}

// SetEmit replaces the event sink (the CLI swaps printers between plan and apply).
func (e *Engine) SetEmit(f func(event.Event)) {
	if f == nil {
		f = func(event.Event) {}
	}
	e.o.Emit = f
}
