package engine

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"slipway.dev/slipway/internal/event"
	"slipway.dev/slipway/internal/kube"
	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/render"
	"slipway.dev/slipway/internal/spec"
	"slipway.dev/slipway/internal/state"
	"slipway.dev/slipway/internal/status"
)

// NodeError is a node that failed; Apply returns them joined, so every failure is reported.
type NodeError struct {
	Node string
	Err  error
}

func (e *NodeError) Error() string { return "node " + e.Node + ": " + e.Err.Error() }
func (e *NodeError) Unwrap() error { return e.Err }

// StalePlanError refuses a saved plan made against another state or cluster.
type StalePlanError struct{ Msg string }

func (e *StalePlanError) Error() string { return e.Msg }

// checkSerial refuses a plan made against another serial of the state.
func checkSerial(p *plan.Plan, serial int64) error {
	if serial != p.StateSerial {
		return &StalePlanError{fmt.Sprintf("plan for group %s was made at state serial %d, the state is now at %d: plan again", p.Group, p.StateSerial, serial)}
	}
	return nil
}

// CheckFresh refuses a saved plan when the state or a planned object moved since it was made.
func (e *Engine) CheckFresh(ctx context.Context, p *plan.Plan, t Target) error {
	// A saved plan with conflicts is refused for them, not as stale.
	if err := p.Blocked(); err != nil {
		return err
	}
	doc, err := readState(ctx, t)
	if err != nil {
		return err
	}
	var serial int64
	if doc != nil {
		serial = doc.Serial
	}
	if err := checkSerial(p, serial); err != nil {
		return err
	}
	live, err := e.o.Kube.ListManaged(ctx, p.Namespace, render.LabelGroup+"="+p.Group)
	if err != nil {
		return err
	}
	planned := map[plan.Key]bool{}
	for _, n := range p.Nodes {
		for _, c := range n.Changes {
			planned[c.Key] = true
			l := live[kube.Key(c.Key)]
			switch {
			case c.Action == plan.Create && l != nil:
				return &StalePlanError{fmt.Sprintf("plan: %s was created since the plan was made: plan again", c.Key)}
			case c.Action != plan.Create && (l == nil || l.GetResourceVersion() != c.ResourceVersion):
				return &StalePlanError{fmt.Sprintf("plan: %s changed in the cluster since the plan was made: plan again", c.Key)}
			}
		}
	}
	// An object the plan left alone must still be as it was: otherwise the plan is not the
	// truth any more.
	for _, d := range p.Desired {
		k := plan.KeyOf(d)
		if planned[k] || k.Kind == "Namespace" {
			continue
		}
		if l := live[kube.Key(k)]; l == nil || !plan.Subset(d.Object, l.Object) {
			return &StalePlanError{fmt.Sprintf("plan: %s changed in the cluster since the plan was made: plan again", k)}
		}
	}
	return nil
}

// Apply carries out p (SPEC §6). Nodes run in parallel, Parallelism at a time; a failed node
// does not stop the others. The error joins every NodeError.
func (e *Engine) Apply(ctx context.Context, p *plan.Plan, t Target) error {
	p, err := withSecretData(p, t.Group) // before any change: a missing value stops it all
	if err != nil {
		return err
	}
	doc, err := readState(ctx, t)
	if err != nil {
		return err
	}
	if doc == nil {
		doc = &state.Document{Group: p.Group}
	}
	if err := checkSerial(p, doc.Serial); err != nil {
		return err
	}
	// Objects slipway did not make, or a namespace being deleted: nothing is changed at all.
	if err := p.Blocked(); err != nil {
		return err
	}
	rec := newRecorder(t.Store, doc)

	desiredNodes := map[string]bool{}
	for _, n := range t.Group.Nodes {
		desiredNodes[n.Name] = true
	}
	stateChanged := doc.Namespace != p.Namespace
	for _, n := range t.Group.Nodes {
		if s := doc.Nodes[n.Name]; s == nil || s.MachineID != p.MachineIDs[n.Name] || s.Protect != n.State.Protect {
			stateChanged = true
		}
	}
	for name := range doc.Nodes {
		if !desiredNodes[name] {
			stateChanged = true
		}
	}
	if stateImagesLag(doc, p, t) {
		stateChanged = true
	}
	if !p.HasChanges() {
		if stateChanged {
			// The cluster is right; only the state lags (a first run that was killed after
			// its last apply, say): record it without touching the cluster.
			if err := rec.update(ctx, "of a cluster that needs no change", func(d *state.Document) { e.recordAll(d, p, t) }); err != nil {
				return err
			}
		}
		e.emit(event.Event{Phase: event.PhaseUnchanged, Message: "No changes."})
		return nil
	}

	// 1. Images first: a push that fails stops its node before the cluster is touched, and
	// with every push failing the cluster is left exactly as it was.
	failed := e.blockedNodes(p)
	var fmu sync.Mutex
	var toPush []plan.Image
	for _, im := range p.Images {
		if im.Push && failed[im.Node] == nil {
			toPush = append(toPush, im)
		}
	}
	forEach(ctx, e.o.Parallelism, toPush, func(im plan.Image) {
		if err := e.push(ctx, im); err != nil {
			fmu.Lock()
			failed[im.Node] = errors.Join(failed[im.Node], err)
			fmu.Unlock()
			e.emit(event.Event{Node: im.Node, Phase: event.PhaseFailed, Message: err.Error()})
		}
	})
	if len(failed) > 0 && len(failed) >= len(t.Group.Nodes) {
		return nodeErrors(failed)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("apply interrupted before any change to the cluster: %w", err)
	}

	rec.mu.Lock()
	rec.doc.Namespace = p.Namespace
	rec.mu.Unlock()

	// 2. The namespace and default-deny, before any Deployment (FR-010).
	byKey := map[plan.Key]*unstructured.Unstructured{}
	for _, d := range p.Desired {
		byKey[plan.KeyOf(d)] = d
	}
	if g := p.Node(""); g != nil {
		for _, c := range g.Changes {
			if c.Action == plan.Delete {
				continue
			}
			if err := e.applyChange(ctx, c, byKey[c.Key]); err != nil {
				return err
			}
		}
	}

	w, err := e.o.Kube.Watch(ctx, p.Namespace)
	if err != nil {
		return err
	}
	defer w.Stop()

	// 3. Each node's own steps.
	var nodes []string
	for _, n := range t.Group.Nodes {
		if failed[n.Name] == nil {
			nodes = append(nodes, n.Name)
		}
	}
	forEach(ctx, e.o.Parallelism, nodes, func(name string) {
		if ctx.Err() != nil {
			// Interrupted: nodes not started stay as they are; the next apply converges.
			fmu.Lock()
			failed[name] = fmt.Errorf("not started: %w", ctx.Err())
			fmu.Unlock()
			return
		}
		err := e.applyNode(ctx, p, t, rec, w, byKey, name)
		if err != nil {
			fmu.Lock()
			failed[name] = err
			fmu.Unlock()
			e.emit(event.Event{Node: name, Phase: event.PhaseFailed, Message: err.Error()})
		}
	})

	// 4. What left the group goes: a removed node's objects, its claim included.
	var removed []plan.NodePlan
	for _, np := range p.Nodes {
		if np.Node != "" && !desiredNodes[np.Node] {
			removed = append(removed, np)
		}
	}
	forEach(ctx, e.o.Parallelism, removed, func(np plan.NodePlan) {
		if ctx.Err() != nil {
			return
		}
		e.emit(event.Event{Node: np.Node, Phase: event.PhasePrune, Message: fmt.Sprintf("removing %d objects of a node that left the group", len(np.Changes))})
		if err := e.deleteAll(ctx, np.Changes); err != nil {
			fmu.Lock()
			failed[np.Node] = err
			fmu.Unlock()
			return
		}
		if err := rec.removed(ctx, np.Node); err != nil {
			fmu.Lock()
			failed[np.Node] = err
			fmu.Unlock()
			return
		}
		e.emit(event.Event{Node: np.Node, Phase: event.PhaseDone, Message: "removed"})
	})
	if err := ctx.Err(); err != nil && len(failed) == 0 {
		return fmt.Errorf("apply interrupted: %w", err)
	}
	return nodeErrors(failed)
}

func nodeErrors(failed map[string]error) error {
	var errs []error
	for _, n := range slices.Sorted(maps.Keys(failed)) {
		errs = append(errs, &NodeError{Node: n, Err: failed[n]})
	}
	return errors.Join(errs...)
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
		ns := d.Nodes[n.Name]
		if ns == nil {
			ns = &state.NodeState{}
			if d.Nodes == nil {
				d.Nodes = map[string]*state.NodeState{}
			}
			d.Nodes[n.Name] = ns
		}
		e.recordNode(ns, p, n)
		if ns.Image.Digest != "" && ns.PreviousReady == "" {
			ns.PreviousReady = ns.Image.Ref + "@" + ns.Image.Digest
		}
	}
	for name := range d.Nodes {
		if !keep[name] {
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

func (e *Engine) push(ctx context.Context, im plan.Image) error {
	e.mu.Lock()
	img, ok := e.images[im.Name]
	e.mu.Unlock()
	if !ok {
		return fmt.Errorf("image %s: not built in this run", im.Name)
	}
	e.emit(event.Event{Node: im.Node, Phase: event.PhasePush, Message: "pushing " + im.Tag})
	d, err := e.o.Publisher.Publish(ctx, im.Tag, img, func(done, total int64) {
		e.emit(event.Event{Node: im.Node, Phase: event.PhasePush, Image: &event.Image{Name: im.Name, Kind: event.ImageProgress, Ref: im.Tag, Done: done, Total: total}})
	})
	if err != nil {
		return fmt.Errorf("image %s: push %s: %w", im.Name, im.Tag, err)
	}
	if d.String() != im.Digest {
		return fmt.Errorf("image %s: the registry returned %s for %s, the plan expected %s", im.Name, d, im.Tag, im.Digest)
	}
	e.emit(event.Event{Node: im.Node, Phase: event.PhasePush, Message: "pushed " + d.String()})
	return nil
}

// applyChange creates, updates or replaces one object (not a delete).
func (e *Engine) applyChange(ctx context.Context, c plan.Change, obj *unstructured.Unstructured) error {
	_, err := e.applyObject(ctx, c, obj)
	return err
}

// applyObject is applyChange returning the object's generation after the apply, which a wait
// must see in its cache before it trusts the status there.
func (e *Engine) applyObject(ctx context.Context, c plan.Change, obj *unstructured.Unstructured) (int64, error) {
	if obj == nil {
		return 0, fmt.Errorf("%s: not in the plan's objects", c.Key)
	}
	ctx = context.WithoutCancel(ctx) // one API call: let it finish
	if c.Action == plan.Replace {
		if err := e.o.Kube.Delete(ctx, kube.Key(c.Key)); err != nil {
			return 0, err
		}
		if err := e.o.Kube.WaitGone(ctx, kube.Key(c.Key), 2*time.Minute); err != nil {
			return 0, err
		}
	}
	out, err := e.o.Kube.Apply(ctx, obj, kube.ApplyOptions{Force: true})
	if err != nil {
		return 0, err
	}
	return out.GetGeneration(), nil
}

// deleteAll deletes changes in reverse apply order: Deployments first, the claim last.
func (e *Engine) deleteAll(ctx context.Context, changes []plan.Change) error {
	order := map[string]int{"PodDisruptionBudget": -1, "Deployment": 0, "Service": 1, "PersistentVolumeClaim": 2, "ServiceAccount": 3, "NetworkPolicy": 4}
	cs := slices.Clone(changes)
	slices.SortStableFunc(cs, func(a, b plan.Change) int { return order[a.Key.Kind] - order[b.Key.Kind] })
	var errs []error
	var deleted []plan.Change
	for _, c := range cs {
		if c.Action == plan.Delete {
			err := e.o.Kube.Delete(context.WithoutCancel(ctx), kube.Key(c.Key))
			errs = append(errs, err)
			if err == nil {
				deleted = append(deleted, c)
			}
		}
	}
	// Wait until they are gone (a claim goes only after its pod): a node or role added back
	// right after must get a new claim, not the terminating one.
	for _, c := range deleted {
		if err := e.o.Kube.WaitGone(ctx, kube.Key(c.Key), 2*time.Minute); err != nil {
			errs = append(errs, err)
			break
		}
	}
	return errors.Join(errs...)
}

// applyNode runs SPEC §6 steps 2–8 for one node.
func (e *Engine) applyNode(ctx context.Context, p *plan.Plan, t Target, rec *recorder, w deploymentWatch, byKey map[plan.Key]*unstructured.Unstructured, name string) error {
	n := t.Group.Node(name)
	np := p.Node(name)
	record := func(step string) error {
		return rec.update(ctx, step+" of node "+name, func(d *state.Document) {
			ns := rec.node(name)
			prevImage := ns.Image
			e.recordNode(ns, p, n)
			// Until the rollout says otherwise, the image that became ready is the old one.
			if ns.PreviousReady == "" && prevImage.Digest != "" {
				ns.PreviousReady = prevImage.Ref + "@" + prevImage.Digest
			}
			ns.Suspended = p.Suspended
		})
	}
	if np == nil || len(np.Changes) == 0 {
		e.emit(event.Event{Node: name, Phase: event.PhaseUnchanged, Ready: 1, Desired: 1})
		return record("for the unchanged objects")
	}
	mainKey := plan.Key{Kind: "Deployment", Namespace: p.Namespace, Name: name}
	roleKeys := map[string]plan.Key{}
	for _, r := range n.Roles {
		roleKeys[r.Name] = plan.Key{Kind: "Deployment", Namespace: p.Namespace, Name: spec.RoleObjectName(name, r.Name)}
	}
	isDeployment := func(k plan.Key) bool { return k.Kind == "Deployment" }

	// Steps 2–3: the node's policies, account, claim and Services.
	e.emit(event.Event{Node: name, Phase: event.PhaseApply, Message: "policies, account, claim, services"})
	for _, c := range np.Changes {
		if c.Action == plan.Delete || isDeployment(c.Key) {
			continue
		}
		if err := e.applyChange(ctx, c, byKey[c.Key]); err != nil {
			return err
		}
	}
	if err := record("after the policies, account, claim and services"); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("interrupted after its policies and claim: %w", err)
	}

	mainChange := p.Change(mainKey)
	// Roles stop for any change of the node's pod template, not only its image: the test of
	// a rollout is the new pod, and a role must never run beside a node it does not match.
	imageChanges := mainChange != nil && (mainChange.Action == plan.Create || diffTouches(mainChange.Diff, "spec.template."))
	suspended := p.Suspended

	// Step 4: roles running the node's image stop before that image changes (FR-006a); a
	// service role stops before its own image changes.
	var stopped []string
	for _, r := range n.Roles {
		k := roleKeys[r.Name]
		rc := p.Change(k)
		if rc == nil || rc.Action == plan.Create {
			continue
		}
		if (r.Service == nil && imageChanges && mainChange.Action != plan.Create) || (r.Service != nil && diffTouches(rc.Diff, "spec.template.")) {
			stopped = append(stopped, r.Name)
		}
	}
	if mainChange != nil && mainChange.Action != plan.Create && imageChanges {
		for _, r := range n.Roles {
			if r.Service == nil && p.Change(roleKeys[r.Name]) == nil && !slices.Contains(stopped, r.Name) {
				stopped = append(stopped, r.Name) // unchanged role on the node's image
			}
		}
	}
	slices.Sort(stopped)
	for _, r := range stopped {
		k := roleKeys[r]
		e.emit(event.Event{Node: name, Phase: event.PhaseStopRoles, Message: "role " + r + ": to 0 replicas before the image changes"})
		if err := e.scaleAndWait(ctx, w, k, 0); err != nil {
			return fmt.Errorf("role %s: stop: %w", r, err)
		}
	}

	// Steps 5–6: the main Deployment, its rollout, and the way back.
	if mainChange != nil {
		if err := e.rollout(ctx, p, rec, w, n, mainChange, byKey[mainKey]); err != nil {
			return err
		}
	}

	// Step 7: roles back to their replicas (and new or changed roles applied), only next to a
	// ready node: without a rollout in this run, the node's readiness is waited for first.
	if mainChange == nil && slices.ContainsFunc(n.Roles, func(r *spec.Role) bool {
		return p.Change(roleKeys[r.Name]) != nil || slices.Contains(stopped, r.Name)
	}) {
		if err := e.nodeReadyForRoles(ctx, rec, w, n, mainKey); err != nil {
			return err
		}
	}
	for _, r := range n.Roles {
		k := roleKeys[r.Name]
		rc := p.Change(k)
		if rc == nil && !slices.Contains(stopped, r.Name) {
			continue
		}
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("interrupted before starting role %s: %w", r.Name, err)
		}
		replicas := r.Replicas
		if suspended {
			replicas = 0
		}
		e.emit(event.Event{Node: name, Phase: event.PhaseStartRoles, Message: fmt.Sprintf("role %s: %d replicas", r.Name, replicas), Desired: replicas})
		out, err := e.o.Kube.Apply(context.WithoutCancel(ctx), byKey[k], kube.ApplyOptions{Force: true})
		if err != nil {
			return fmt.Errorf("role %s: %w", r.Name, err)
		}
		res := e.wait(ctx, w, k, out.GetGeneration(), time.Now(), e.rolloutLimit(n), name, status.Rollout)
		if res.Phase != status.Ready {
			_, _ = e.o.Kube.Scale(context.WithoutCancel(ctx), k.Namespace, k.Name, 0)
			e.emit(event.Event{Node: name, Phase: event.PhaseStartRoles, Message: "role " + r.Name + ": back to 0 replicas"})
			return fmt.Errorf("role %s did not become ready (%s); it is back at 0 replicas, the node keeps its new image, and the next apply starts it again", r.Name, res.Message)
		}
	}

	// Step 8: objects of roles that left the node.
	var gone []plan.Change
	for _, c := range np.Changes {
		if c.Action == plan.Delete {
			gone = append(gone, c)
		}
	}
	if len(gone) > 0 {
		e.emit(event.Event{Node: name, Phase: event.PhasePrune, Message: fmt.Sprintf("removing %d objects that left the group", len(gone))})
		if err := e.deleteAll(ctx, gone); err != nil {
			return err
		}
	}
	if err := record("after the roles and removals"); err != nil {
		return err
	}
	e.emit(event.Event{Node: name, Phase: event.PhaseDone, Ready: 1, Desired: 1})
	return nil
}

// diffTouches reports whether a field diff touches a path that contains part.
func diffTouches(diff []plan.FieldDiff, part string) bool {
	for _, d := range diff {
		if strings.Contains(d.Path, part) {
			return true
		}
	}
	return false
}

// scaleAndWait sets a Deployment's replicas and waits until its pods match (0: all gone).
func (e *Engine) scaleAndWait(ctx context.Context, w deploymentWatch, k plan.Key, replicas int32) error {
	gen, err := e.o.Kube.Scale(context.WithoutCancel(ctx), k.Namespace, k.Name, replicas)
	if err != nil {
		return err
	}
	check := status.Rollout
	if replicas == 0 {
		check = status.ScaledDown
	}
	res := e.wait(ctx, w, k, gen, time.Now(), spec.DefaultRolloutTimeout, "", check)
	if res.Phase != status.Ready {
		return errors.New(res.Message)
	}
	return nil
}

// wait follows Deployment k in the watch cache until check says Ready or Failed, ctx ends, or
// the limit passes (check decides what the limit means).
//
// minGen is the generation the apply (or scale) returned: until the cache holds it, the
// status there is of the old object and says nothing about this rollout.
func (e *Engine) wait(ctx context.Context, w deploymentWatch, k plan.Key, minGen int64, since time.Time, limit time.Duration, node string, check func(status.Input) status.Result) status.Result {
	var last status.Result
	tick := time.NewTicker(time.Second) // time passes even when nothing changes: limits, grace
	defer tick.Stop()
	for {
		changed := w.Changed(k.Name)
		dep, rss, pods, evs := w.Deployment(k.Namespace, k.Name)
		if dep != nil && dep.Generation < minGen {
			dep = nil // not seen yet: progressing until the limit
		}
		res := check(status.Input{Deployment: dep, ReplicaSets: rss, Pods: pods, Events: evs,
			Now: time.Now(), Since: since, Limit: limit})
		if node != "" && (res.Ready != last.Ready || res.Desired != last.Desired || res.Phase != last.Phase) {
			e.emit(event.Event{Node: node, Phase: event.PhaseRollout, Message: k.Name + ": " + string(res.Phase), Ready: res.Ready, Desired: res.Desired})
		}
		last = res
		if res.Phase != status.Progressing {
			return res
		}
		select {
		case <-changed:
		case <-tick.C:
		case <-ctx.Done():
			return status.Result{Phase: status.Failed, Reason: "Interrupted", Message: k.String() + ": interrupted while waiting for the rollout"}
		}
	}
}

// failureReport is the recent events of the pod, its ReplicaSet and its Deployment, each under
// the object they are about, and the pod's last log lines, for the operator.
func (e *Engine) failureReport(ctx context.Context, w deploymentWatch, k plan.Key, res status.Result) string {
	dep, rss, pods, evs := awaitPodEvents(ctx, w, k, res.Pod, podEventsGrace)
	var b strings.Builder
	if res.Pod != "" {
		for _, g := range status.Events(status.Input{Deployment: dep, ReplicaSets: rss, Pods: pods, Events: evs, Now: time.Now()}, res.Pod, 10) {
			fmt.Fprintf(&b, "\n  events of %s:\n    %s", g.Object, strings.Join(g.Lines, "\n    "))
		}
		container := render.ContainerNode
		for _, p := range pods {
			if p.Name == res.Pod && len(p.Spec.Containers) > 0 {
				container = p.Spec.Containers[0].Name
			}
		}
		if logs := e.o.Kube.PodLogTail(context.WithoutCancel(ctx), k.Namespace, res.Pod, container, 20); logs != "" {
			fmt.Fprintf(&b, "\n  last log lines of pod %s:\n    %s", res.Pod, strings.ReplaceAll(logs, "\n", "\n    "))
		}
	}
	return b.String()
}

// rollbackTarget returns the Deployment as it should be set back to on a failed rollout: the
// live one when it runs ready, else the live one with the template of the ReplicaSet whose
// pod-template-hash is readyHash; nil when there is none (a first deploy).
func rollbackTarget(w deploymentWatch, k plan.Key, readyHash string) *appsv1.Deployment {
	live, rss, _, _ := w.Deployment(k.Namespace, k.Name)
	if live == nil {
		return nil
	}
	if wasReady(live) {
		return live
	}
	if readyHash == "" {
		return nil
	}
	for _, rs := range rss {
		if rs.Labels[appsv1.DefaultDeploymentUniqueLabelKey] == readyHash && metav1.IsControlledBy(rs, live) {
			prev := live.DeepCopy()
			prev.Spec.Template = *rs.Spec.Template.DeepCopy()
			return prev
		}
	}
	return nil
}

// templateHash is the pod-template-hash of the Deployment's current ReplicaSet (the one of
// its revision), "" when the cache does not show it.
func templateHash(w deploymentWatch, k plan.Key) string {
	live, rss, _, _ := w.Deployment(k.Namespace, k.Name)
	if live == nil {
		return ""
	}
	rev := live.Annotations["deployment.kubernetes.io/revision"]
	for _, rs := range rss {
		if rev != "" && rs.Annotations["deployment.kubernetes.io/revision"] == rev && metav1.IsControlledBy(rs, live) {
			return rs.Labels[appsv1.DefaultDeploymentUniqueLabelKey]
		}
	}
	return ""
}

// wasReady reports whether a Deployment had all its replicas ready on its current template.
func wasReady(d *appsv1.Deployment) bool {
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	return want > 0 && d.Status.ObservedGeneration >= d.Generation &&
		d.Status.UpdatedReplicas == want && d.Status.ReadyReplicas == want && d.Status.Replicas == want
}

// rollbackObject is an apply configuration that puts the previous pod template back, with
// slipway's labels and strategy, so the apply owns exactly what it owned before.
func rollbackObject(prev *appsv1.Deployment) *appsv1.Deployment {
	tmpl := prev.Spec.Template.DeepCopy()
	delete(tmpl.Labels, appsv1.DefaultDeploymentUniqueLabelKey)
	return &appsv1.Deployment{
		TypeMeta:   render.DeploymentTypeMeta,
		ObjectMeta: metav1ObjectMeta(prev.Name, prev.Namespace, prev.Labels),
		Spec: appsv1.DeploymentSpec{
			Replicas: prev.Spec.Replicas,
			Selector: prev.Spec.Selector,
			Strategy: prev.Spec.Strategy,
			Template: *tmpl,
		},
	}
}

func firstImage(cs []corev1.Container) string {
	for _, c := range cs {
		if c.Name == render.ContainerNode || c.Name == render.ContainerService {
			return c.Image
		}
	}
	if len(cs) > 0 {
		return cs[0].Image
	}
	return ""
}

// digestOf returns the sha256:… part of a reference pinned by digest.
func digestOf(ref string) string {
	if _, d, ok := strings.Cut(ref, "@"); ok {
		return d
	}
	return ref
}

func metav1ObjectMeta(name, ns string, labels map[string]string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: ns, Labels: maps.Clone(labels)}
}
