package engine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"slipway.dev/slipway/internal/engine/dryrun"
	"slipway.dev/slipway/internal/engine/lane"
	"slipway.dev/slipway/internal/engine/migrate"
	"slipway.dev/slipway/internal/engine/secrets"
	"slipway.dev/slipway/internal/event"
	"slipway.dev/slipway/internal/image"
	"slipway.dev/slipway/internal/parallel"
	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/render"
	"slipway.dev/slipway/internal/spec"
	"slipway.dev/slipway/internal/state"
)

// Plan computes what Apply would do. It builds the images (to know their digests) and asks
// the registry which it lacks, but pushes nothing and writes nothing.
func (e *Engine) Plan(ctx context.Context, t Target) (*plan.Plan, error) {
	return e.plan(ctx, t, false)
}

// PlanForApply is Plan for apply: the creates of a first apply into a new namespace are
// dry-run one per shape, not one by one (internal/engine/dryrun).
func (e *Engine) PlanForApply(ctx context.Context, t Target) (*plan.Plan, error) {
	return e.plan(ctx, t, true)
}

func (e *Engine) plan(ctx context.Context, t Target, forApply bool) (*plan.Plan, error) {
	t, err := e.adopting(ctx, t)
	if err == nil && forApply && t.adopt == nil {
		err = e.dropStaleAdoptLock(ctx, t) // apply's plan runs under the lock: a plan without changes applies nothing
	}
	if err != nil {
		return nil, err
	}
	doc, images, l, err := e.readInputs(ctx, t)
	if err != nil {
		return nil, err
	}
	if err := otherDeployments(t, l.foreign); err != nil {
		return nil, err
	}
	if err := e.referencesExist(ctx, t, &l); err != nil {
		return nil, err
	}
	pr := &lane.PlanRun{Target: t.lent(), Doc: doc, Live: l.live, Namespace: l.ns}
	defer pr.Close()
	if err := e.prepare(ctx, pr); err != nil {
		return nil, err
	}
	ids, _ := MachineIDs(t.Group, doc, l.live, t.Namespace)
	suspended := isSuspended(doc)
	versions, err := migrate.Versions(t.Group, e.labels.get())
	if err != nil {
		return nil, err
	}
	key, err := secrets.PlanKey(doc)
	if err != nil {
		return nil, err
	}
	desired, err := e.render(ctx, pr, render.Input{}, func(in render.Input) ([]render.Object, error) {
		return desiredObjects(t, images, ids, versions, key, l.features, suspended, in)
	})
	if err != nil {
		return nil, err
	}
	if err := e.completeForeign(ctx, t, &l, lacksAny(desired, t.Namespace, l.live, l.foreign)); err != nil {
		return nil, err
	}
	in, err := e.compare(ctx, t, l, desired, forApply)
	if err != nil {
		return nil, err
	}
	in.Suspended, in.Images, in.MachineIDs = suspended, images, ids
	stateInput(&in, doc)
	in.Versions = maps.Clone(versions)
	if err := e.input(ctx, pr, &in); err != nil {
		return nil, err
	}
	for _, n := range t.Group.Nodes {
		if d := l.live[plan.Key{Kind: "Deployment", Namespace: t.Namespace, Name: n.Name}]; d != nil {
			in.RunningImages[n.Name] = liveContainerImage(d, render.ContainerNode)
		}
	}
	if !suspended {
		if in.NotReady, err = e.notReady(ctx, t, l.live); err != nil {
			return nil, err
		}
	}
	return e.computePlan(ctx, t, pr, doc, l, key, in)
}

// computePlan turns what plan read into the plan: Compute, then what the target, the state's
// protected nodes and the lanes add to it, then its steps, built last from every change the
// lanes' amendments left.
func (e *Engine) computePlan(ctx context.Context, t Target, pr *lane.PlanRun, doc *state.Document, l listed, key []byte, in plan.Input) (*plan.Plan, error) {
	p := plan.Compute(in)
	p.SecretKey = key
	if t.KeepClaims {
		plan.KeepClaims(p)
		p.Notes = append(p.Notes, keptNotes(p)...)
	}
	if err := plan.Protect(p, lane.ProtectedNodes(t.Group, doc)); err != nil {
		return nil, err
	}
	for _, note := range []string{l.stopNote, l.monitorNote} {
		if note != "" {
			p.Notes = append(p.Notes, note)
		}
	}
	p.Notes = append(p.Notes, pr.Notes...)
	if err := e.amend(ctx, pr, p); err != nil {
		return nil, err
	}
	if t.adopt != nil {
		p.Notes = append(p.Notes, adoptNote(t))
	}
	p.Steps = plan.BuildSteps(p, t.Group, e.rolloutLimit)
	return p, nil
}

// readInputs reads what a plan starts from: the state, the images and the live objects. The
// three go side by side with the preflight checks, which are round trips to the API server
// each (a 1,000-node plan waited 20–70 ms on them before its LISTs, issue 17); they only
// read, so a preflight that fails has changed nothing, and its error is the one returned.
func (e *Engine) readInputs(ctx context.Context, t Target) (*state.Document, []plan.Image, listed, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg      sync.WaitGroup
		l       listed
		images  []plan.Image
		imgsErr error
	)
	// The preflight and the list both read the namespace: one read for the two.
	readNamespace := sync.OnceValues(t.relabelledNamespace(func() (*unstructured.Unstructured, error) { return e.o.Kube.Namespace(ctx, t.Namespace) }))
	wg.Go(func() { l = e.listLive(ctx, t, readNamespace) })
	wg.Go(func() { images, imgsErr = e.resolveImages(ctx, t) })
	doc, err := e.preflightState(ctx, t, readNamespace)
	if err != nil {
		cancel()
	}
	wg.Wait()
	if err := cmp.Or(err, imgsErr, l.err); err != nil {
		return nil, nil, listed{}, err
	}
	return doc, images, l, nil
}

// preflightState runs the preflight checks, then reads the state.
func (e *Engine) preflightState(ctx context.Context, t Target, readNamespace func() (*unstructured.Unstructured, error)) (*state.Document, error) {
	if err := e.preflight(ctx, t, readNamespace); err != nil {
		return nil, err
	}
	return readState(ctx, t)
}

// listed is what Plan reads of the cluster while the images resolve.
type listed struct {
	live, foreign map[plan.Key]plan.Object // typed for the built-in kinds
	// partial: foreign holds only the objects of a wave run's groups (listNamespace).
	partial     bool
	ns          *unstructured.Unstructured
	err         error
	features    features
	stopNote    string // why systemd pods get no SIGRTMIN+3, when they do not
	monitorNote string // why roles get no ServiceMonitor, when they do not
}

// features are what the cluster supports of what render may make.
type features struct {
	stop     bool // systemd pods get SIGRTMIN+3
	monitors bool // roles that ask get a ServiceMonitor
}

// compare reads what the cluster says of the desired objects: the live ones keyed with the
// namespace, and a server-side dry run of what looks changed. A namespace being deleted
// forbids every create: the plan says it is being deleted (Compute) rather than fail on the
// first dry run, and apply refuses it.
func (e *Engine) compare(ctx context.Context, t Target, l listed, objs []render.Object, forApply bool) (plan.Input, error) {
	foreignNS := l.ns != nil && !ownsNamespace(l.ns, t.Group.Name)
	if foreignNS {
		objs = withoutNamespace(objs)
	}
	live := maps.Clone(l.live)
	if l.ns != nil {
		live[plan.Key{Kind: "Namespace", Name: t.Namespace}] = l.ns
	}
	desired, deferred, unchanged, err := convertedOrDeferred(objs, live, l.foreign)
	if err != nil {
		return plan.Input{}, err
	}
	liveByKey, err := liveMaps(live, unchanged)
	if err != nil {
		return plan.Input{}, err
	}
	foreign, err := liveMaps(l.foreign, nil)
	if err != nil {
		return plan.Input{}, err
	}
	dry, immutable := map[plan.Key]*unstructured.Unstructured{}, map[plan.Key]string{}
	if l.ns == nil || l.ns.GetDeletionTimestamp() == nil {
		newNS := ""
		if l.ns == nil {
			newNS = t.Namespace
		}
		in := dryrun.Input{Desired: desired, Live: liveByKey, Foreign: foreign, NewNamespace: newNS, ForApply: forApply, Unchanged: unchanged}
		if dry, immutable, err = dryrun.Run(ctx, e.o.Kube, e.o.Parallelism, in); err != nil {
			return plan.Input{}, err
		}
	}
	return plan.Input{
		Group: t.Group.Name, Namespace: t.Namespace,
		Desired: desired, Live: liveByKey, DryRun: dry, Immutable: immutable, Unchanged: unchanged,
		Deferred: deferred, Foreign: foreign, ForeignNamespace: foreignNS,
		StateImages: map[string]string{}, RolledBack: map[string]string{}, Failed: map[string]string{}, RunningImages: map[string]string{},
		Interrupted: map[string]string{},
	}, nil
}

// stateInput fills in what the plan reads of the state: its serial, the images it recorded,
// and the rollouts that were rolled back, failed or are in flight.
func stateInput(in *plan.Input, doc *state.Document) {
	if doc == nil {
		return
	}
	in.StateSerial, in.StateLineage = doc.Serial, doc.Lineage
	for name, ns := range doc.Nodes {
		if ns.Image.Digest != "" {
			in.StateImages[name] = ns.Image.Ref + "@" + ns.Image.Digest
		}
		if ns.LastRollout != nil && ns.LastRollout.Result == event.RolloutRolledBack {
			in.RolledBack[name] = ns.LastRollout.Message
		}
		if ns.LastRollout != nil && ns.LastRollout.Result == event.RolloutFailed {
			in.Failed[name] = ns.LastRollout.Message
		}
		if lane.InFlight(ns) {
			in.Interrupted[name] = ns.LastRollout.Message
		}
	}
}

// resolveImages builds every image of the group and asks the registry for its tag.
func (e *Engine) resolveImages(ctx context.Context, t Target) ([]plan.Image, error) {
	out := make([]plan.Image, len(t.Jobs))
	errs := make([]error, len(t.Jobs))
	var mu sync.Mutex
	// Mostly a HEAD request each, and a hashing pass over a rootfs: more at a time than the
	// nodes an apply rolls out.
	parallel.ForEach(max(e.o.Parallelism, 32), parallel.Indexes(len(t.Jobs)), func(i int) {
		job := t.Jobs[i]
		img, ref, warnings, err := image.BuildTagged(ctx, e.o.Builder, job)
		for _, w := range warnings {
			e.emit(event.Event{Node: nodeOfJob(t.Group, job.Name), Phase: event.PhasePlan, Message: "image " + job.Name + ": " + w})
		}
		if err != nil {
			errs[i] = fmt.Errorf("node %s: %w", nodeOfJob(t.Group, job.Name), err)
			return
		}
		// The registry's digest for the content tag is what a Deployment pins (SPEC §4). Only
		// an image the registry lacks needs its own digest, which compresses its layer: an
		// unchanged node costs a hashing pass and a HEAD, no compression.
		h, found, err := e.o.Publisher.Lookup(ctx, ref)
		if err == nil && !found {
			h, err = img.Digest()
		}
		if err != nil {
			errs[i] = fmt.Errorf("node %s: image %s: %w", nodeOfJob(t.Group, job.Name), job.Name, err)
			return
		}
		if err := serviceUser(t.Group, job.Name, img); err != nil {
			errs[i] = fmt.Errorf("node %s: %w", nodeOfJob(t.Group, job.Name), err)
			return
		}
		out[i] = plan.Image{Name: job.Name, Node: nodeOfJob(t.Group, job.Name), Tag: ref,
			Digest: job.Repository + "@" + h.String(), Push: !found}
		mu.Lock()
		e.images[job.Name] = img
		mu.Unlock()
		if job.Name == nodeOfJob(t.Group, job.Name) {
			if v, err := image.Label(img, spec.LabelStateVersion); err == nil {
				e.labels.set(job.Name, v)
			}
		}
	})
	// A builder that remembers its trees (image.LocalBuilder) keeps what it read for the next
	// run; failing to is worth a word, not a failed plan.
	if ix, ok := e.o.Builder.(interface{ SaveIndex() error }); ok {
		if err := ix.SaveIndex(); err != nil {
			e.emit(event.Event{Phase: event.PhasePlan, Message: "warning: " + err.Error()})
		}
	}
	return out, errors.Join(errs...)
}

// nodeOfJob maps an image name (node, <node>-<role>, or <node>-<role>/secrets) to its node.
func nodeOfJob(g *spec.Group, name string) string {
	name = strings.TrimSuffix(name, "/secrets")
	if g.Node(name) != nil {
		return name
	}
	for _, n := range g.Nodes {
		for _, r := range n.Roles {
			if spec.RoleObjectName(n.Name, r.Name) == name {
				return n.Name
			}
		}
	}
	return name
}

// isSuspended reports whether suspend left the group at 0 replicas (every node marked).
func isSuspended(doc *state.Document) bool {
	if doc == nil || len(doc.Nodes) == 0 {
		return false
	}
	for _, n := range doc.Nodes {
		if !n.Suspended {
			return false
		}
	}
	return true
}
