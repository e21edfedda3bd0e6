package engine

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"slipway.dev/slipway/internal/engine/lane"
	"slipway.dev/slipway/internal/event"
	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/spec"
	"slipway.dev/slipway/internal/state"
)

// StateWriteError is a state write that failed. The state written after every step is what
// makes a killed run recoverable, so a failed write fails the run: When says which write, by
// when in the run it came (one after a cluster step comes once that step finished; one before
// it stops the step).
type StateWriteError struct {
	When    string // e.g. "after the rollback of deployment web"
	Backend string // the state's location, without credentials
	Err     error
}

func (e *StateWriteError) Error() string {
	return fmt.Sprintf("state %s: write %s failed: %v", e.Backend, e.When, e.Err)
}

func (e *StateWriteError) Unwrap() error { return e.Err }

// recorder keeps the state document of a run and writes it after every step that changed
// the cluster, so a run killed at any point leaves a state the next run converges from.
type recorder struct {
	mu    sync.Mutex // guards doc
	store state.Store
	doc   *state.Document

	// A group commit: update queues its change (pmu); whoever holds wmu applies every queued
	// change and writes them in one document. queued counts the changes queued, written the
	// changes in the last document written.
	pmu     sync.Mutex
	queue   []func(d *state.Document)
	queued  int64
	wmu     sync.Mutex
	written int64
	// pace is the least time between two writes, lastWrite when the last began: the changes
	// of the steps that finish meanwhile go out together in the next.
	pace      time.Duration
	lastWrite time.Time
}

// statePace spaces a run's state writes. Every write is the whole document, so without it a
// first apply wrote about 11 times a second whatever the group's size: at 200 nodes the
// writes were a quarter of slipway's CPU (1.9 of 8.3 s), and a 1,000-node document is five
// times the work per write (issue 17). A step whose change waits for the next write waits
// at most this long; the cluster's steps take seconds. A variable for the engine's tests,
// whose fake steps take microseconds.
var statePace = 250 * time.Millisecond

func newRecorder(store state.Store, doc *state.Document) *recorder {
	return &recorder{store: store, doc: doc, pace: statePace}
}

// backend names the store in errors.
func (r *recorder) backend() string {
	if l, ok := r.store.(interface{ Location() string }); ok {
		return l.Location()
	}
	return fmt.Sprintf("%T", r.store)
}

// Update changes the document with f and writes it; when names the write in its error.
//
// It returns once a written document holds the change. Concurrent updates share writes:
// while one write runs, the changes queued meanwhile go out together in the next. Writing the
// whole document after each of every node's steps, one at a time, grew as the square of the
// group (at 1,000 nodes, 4,000 writes of a 700 KB document).
func (r *recorder) Update(ctx context.Context, when string, f func(d *state.Document)) error {
	r.pmu.Lock()
	r.queue = append(r.queue, f)
	r.queued++
	mine := r.queued
	r.pmu.Unlock()

	r.wmu.Lock()
	defer r.wmu.Unlock()
	if r.written >= mine {
		return nil // a write since the change held it
	}
	if wait := time.Until(r.lastWrite.Add(r.pace)); wait > 0 {
		// Not cut short by ctx: an interrupted run's changes must still be written.
		time.Sleep(wait)
	}
	r.lastWrite = time.Now()
	r.pmu.Lock()
	fs, upTo := r.queue, r.queued
	r.queue = nil
	r.pmu.Unlock()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, f := range fs {
		f(r.doc)
	}
	if r.store != nil {
		// The write must land even when the run is being interrupted: that is the point of it.
		if err := r.store.Write(context.WithoutCancel(ctx), r.doc); err != nil {
			return &StateWriteError{When: when, Backend: r.backend(), Err: err}
		}
	}
	r.written = upTo
	return nil
}

func (r *recorder) node(name string) *state.NodeState { return lane.NodeOf(r.doc, name) }

// View runs f with the document under r's lock (lane.Recorder).
func (r *recorder) View(f func(d *state.Document)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	f(r.doc)
}

var _ lane.Recorder = (*recorder)(nil)

// pending reports whether the state says node's last rollout has not become ready: in
// flight, or failed with nothing to go back to.
func (r *recorder) pending(node string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	ns := r.doc.Nodes[node]
	return lane.InFlight(ns) || ns != nil && ns.LastRollout != nil && ns.LastRollout.Result == event.RolloutFailed
}

// removed records that node's objects are gone.
func (r *recorder) removed(ctx context.Context, node string) error {
	return r.Update(ctx, "after removing node "+node, func(d *state.Document) { delete(d.Nodes, node) })
}

// recordNodeStep writes node's machine IDs, image, roles and suspension from the plan after
// one of its steps (when names the write: "after the roles and removals"). Until the rollout
// says otherwise, the image that became ready is the one recorded before.
func (e *Engine) recordNodeStep(ctx context.Context, r *run, n *spec.Node, when string) error {
	return r.rec.Update(ctx, when+" of node "+n.Name, func(d *state.Document) {
		ns := r.rec.node(n.Name)
		prevImage := ns.Image
		e.recordNode(ns, r.p, n)
		if ns.PreviousReady == "" && prevImage.Digest != "" {
			ns.PreviousReady = prevImage.Ref + "@" + prevImage.Digest
		}
		ns.Suspended = r.p.Suspended
	})
}

// stateImagesLag reports whether the state names another image than p for a node or service
// role: a change rolled back and then reverted in the file leaves the cluster as desired (no
// change to make) but the state naming the image that was rolled back.
func stateImagesLag(doc *state.Document, p *plan.Plan, t Target) bool {
	for _, im := range p.Images {
		ns := doc.Nodes[im.Node]
		if ns == nil {
			continue // a new node: recorded anyway
		}
		if im.Name == im.Node {
			if ns.Image != imageRecord(im) {
				return true
			}
			continue
		}
		if n := t.Group.Node(im.Node); n != nil {
			for _, r := range n.Roles {
				if rs := ns.Roles[r.Name]; rs != nil && spec.RoleObjectName(n.Name, r.Name) == im.Name && rs.Image != imageRecord(im) {
					return true
				}
			}
		}
	}
	return false
}

// recordAll writes into d what p says the cluster holds, for a run that changes nothing.
func (e *Engine) recordAll(d *state.Document, p *plan.Plan, t Target) {
	d.Namespace = p.Namespace
	keep := map[string]bool{}
	for _, n := range t.Group.Nodes {
		keep[n.Name] = true
		ns := lane.NodeOf(d, n.Name)
		e.recordNode(ns, p, n)
		if ns.Image.Digest != "" && ns.PreviousReady == "" {
			ns.PreviousReady = ns.Image.Ref + "@" + ns.Image.Digest
		}
	}
	for name, ns := range d.Nodes {
		switch {
		case keep[name]:
		case p.Kept(name) && ns != nil:
			d.Nodes[name] = keptRecord(ns) // its claim stays (apply --keep-claims)
		default:
			delete(d.Nodes, name)
		}
	}
}

// recordNode sets the node's machine IDs, image and roles from the plan.
func (e *Engine) recordNode(ns *state.NodeState, p *plan.Plan, n *spec.Node) {
	ns.MachineID = p.MachineIDs[n.Name]
	ns.Protect = n.State.Protect
	for _, im := range p.Images {
		if im.Name == n.Name {
			ns.Image = imageRecord(im)
		}
	}
	roles := map[string]*state.RoleState{}
	for _, r := range n.Roles {
		rs := &state.RoleState{Replicas: r.Replicas}
		for _, im := range p.Images {
			if im.Name == spec.RoleObjectName(n.Name, r.Name) {
				rs.Image = imageRecord(im)
			}
		}
		roles[r.Name] = rs
	}
	if len(roles) > 0 {
		ns.Roles = roles
	} else {
		ns.Roles = nil
	}
}

func imageRecord(im plan.Image) state.ImageRecord {
	repo, digest, _ := strings.Cut(im.Digest, "@")
	_, tag, _ := strings.Cut(strings.TrimPrefix(im.Tag, repo), ":")
	return state.ImageRecord{Ref: repo, Tag: tag, Digest: digest}
}
