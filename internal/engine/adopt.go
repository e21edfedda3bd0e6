package engine

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"slipway.dev/slipway/internal/engine/lane"
	"slipway.dev/slipway/internal/event"
	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/spec"
	"slipway.dev/slipway/internal/state"
)

// The upgrade of a per-app target's state (issue 46): releases before deployment keys kept
// target front of group shop under `shop-front` (state shop-front.json or Secret
// slipway-state-shop-front, label slipway.dev/group=shop-front), which is now `shop.front`.
// A state under the old key that was written for this deployment is adopted: plan says so and
// reads it as the deployment's; apply and destroy, under the deployment's lock and the old
// key's, copy it to the new key, relabel the namespace and the objects that carry the old key,
// then delete the old state. Each step can be run again, so a run killed between two is
// finished by the next one; a state under the old key that another group wrote (a group
// called shop-front) is never adopted.

// relabeler changes the slipway.dev/group label of an object; *kube.Client satisfies it.
type relabeler interface {
	Relabel(ctx context.Context, k plan.Key, uid, label, from, to string) error
}

// adoption is the state of an earlier release that t adopts.
type adoption struct {
	from string          // the old key
	doc  *state.Document // the state stored under it
}

// adopting returns t with the adoption it has to make, if any: the deployment is a per-app
// target, t.Legacy holds a state under the old key, written for this target (writtenFor), and
// the deployment's own state is absent or a copy of it (same lineage: a run stopped before
// it deleted the old one).
func (e *Engine) adopting(ctx context.Context, t Target) (Target, error) {
	id := t.Group.Ident()
	if t.Legacy == nil || t.adopt != nil || !id.PerApp() || id.LegacyKey() == t.Group.Name {
		return t, nil
	}
	old, err := t.Legacy.Read(ctx)
	if ge := (*state.GroupError)(nil); errors.As(err, &ge) {
		return t, nil // a document of a third group: not this deployment's
	}
	if err != nil || old == nil || !writtenFor(old, t) {
		return t, err
	}
	cur, err := t.Store.Read(ctx)
	if err != nil {
		return t, err
	}
	if cur != nil && cur.Lineage != old.Lineage {
		return t, nil // two states: neither is taken for the other (the plan refuses the old key's objects)
	}
	t.adopt = &adoption{from: id.LegacyKey(), doc: old}
	return t, nil
}

// writtenFor reports whether the state doc, stored under t's old key, was written for t: it
// names the old key, records t's namespace and only nodes of t's app. A group called
// `shop-front` has other nodes, or another namespace, or both (else it was, to the earlier
// release, the same deployment).
func writtenFor(doc *state.Document, t Target) bool {
	if doc.Group != t.Group.Ident().LegacyKey() || doc.Namespace != t.Namespace || len(doc.Nodes) == 0 {
		return false
	}
	for name := range doc.Nodes {
		if t.Group.Node(name) == nil {
			return false
		}
	}
	return true
}

// adoptedDoc is the document adopt writes under the new key: the old one with the new key as
// its group, its lineage kept (which marks it a copy) and its serial raised by the write.
func (a *adoption) adoptedDoc(key string) *state.Document {
	d := *a.doc
	d.Group, d.AdoptedFrom = key, a.from
	d.Serial++
	return &d
}

// owns reports whether a slipway.dev/group label value is t's: its key, or the old key it
// adopts.
func (t Target) owns(label string) bool {
	return label == t.Group.Name || (t.adopt != nil && label == t.adopt.from)
}

// relabelled returns o as it will be once adopted: a copy with the new key when it carries
// the old one, else o itself. A plan reads the cluster through it, so that it shows what
// apply does after the adoption.
func (t Target) relabelled(o plan.Object) plan.Object {
	if t.adopt == nil || o == nil || o.GetLabels()[spec.LabelGroup] != t.adopt.from {
		return o
	}
	c, ok := o.DeepCopyObject().(plan.Object)
	if !ok {
		return o
	}
	l := maps.Clone(c.GetLabels())
	l[spec.LabelGroup] = t.Group.Name
	c.SetLabels(l)
	return c
}

// relabelledNamespace is relabelled for the namespace a plan reads.
func (t Target) relabelledNamespace(read func() (*unstructured.Unstructured, error)) func() (*unstructured.Unstructured, error) {
	if t.adopt == nil {
		return read
	}
	return func() (*unstructured.Unstructured, error) {
		ns, err := read()
		if err != nil || ns == nil {
			return ns, err
		}
		u, _ := t.relabelled(ns).(*unstructured.Unstructured)
		return u, nil
	}
}

// adoptNote is the plan's word on the adoption.
func adoptNote(t Target) string {
	return fmt.Sprintf("adopts the state of an earlier release: %s kept %s under the key %s, which is now %s; apply (or destroy) moves the state (%s) to %s and relabels the namespace and the objects labelled %s=%s, deleting none",
		t.Group.Name, t.Group.Ident(), t.adopt.from, t.Group.Name, locationOf(t.Legacy), t.Group.Name, spec.LabelGroup, t.adopt.from)
}

func locationOf(s any) string {
	if l, ok := s.(lane.Locator); ok {
		return l.Location()
	}
	return "the state"
}

// Adopt makes t's adoption, if it has one (render, which records machine IDs under the
// deployment's key, adopts first: else it would make new ones beside the old state). Without
// a cluster to relabel the objects in, a pending adoption is refused.
func (e *Engine) Adopt(ctx context.Context, t Target) error {
	if e.o.Kube == nil {
		t, err := e.adopting(ctx, t)
		if err != nil || t.adopt == nil {
			return err
		}
		return fmt.Errorf("%s: its state is under the key of an earlier release, %s, and there is no cluster to relabel its objects in: run `slipway plan` and `slipway apply` with the cluster (apply adopts it) first", t.Group.Ident(), t.adopt.from)
	}
	_, err := e.adopt(ctx, t)
	return err
}

// adopt makes t's adoption, if it has one, holding the old key's lock beside the deployment's
// (an earlier release may still run under it): the state is copied to the new key, the
// namespace and the objects are relabelled, the old state is deleted. It returns t without
// the adoption.
func (e *Engine) adopt(ctx context.Context, t Target) (Target, error) {
	t, err := e.adopting(ctx, t)
	if err != nil || t.adopt == nil {
		if err == nil {
			err = e.dropStaleAdoptLock(ctx, t)
		}
		return t, err
	}
	a := t.adopt
	t.adopt = nil
	lockID, err := t.Legacy.Lock(ctx, state.NewInfo(adoptOp(t)))
	if err != nil {
		return t, fmt.Errorf("%s: adopt the state of key %s: %w", t.Group.Ident(), a.from, err)
	}
	defer func() { _ = t.Legacy.Unlock(context.WithoutCancel(ctx), lockID) }()
	// Read again under the lock: the old key's state may have changed or gone meanwhile.
	if t, err = e.adopting(ctx, t); err != nil || t.adopt == nil {
		return t, err
	}
	a, t.adopt = t.adopt, nil
	cur, err := t.Store.Read(ctx)
	if err != nil {
		return t, err
	}
	if cur == nil {
		d := *a.doc
		d.Group, d.AdoptedFrom = t.Group.Name, a.from
		if err := t.Store.Write(ctx, &d); err != nil {
			return t, fmt.Errorf("%s: adopt the state of key %s: %w", t.Group.Ident(), a.from, err)
		}
	}
	n, err := e.relabelAll(ctx, t, a.from)
	if err != nil {
		return t, err
	}
	if err := t.Legacy.Delete(ctx); err != nil {
		return t, fmt.Errorf("%s: adopted the state of key %s, but deleting it failed (the next run deletes it): %w", t.Group.Ident(), a.from, err)
	}
	e.emit(event.Event{Phase: event.PhaseApply, Message: fmt.Sprintf("adopted the state of key %s (an earlier release's) as %s: state moved, namespace and %d objects relabelled", a.from, t.Group.Name, n)})
	return t, nil
}

// relabelAll relabels t's namespace, when slipway made it for the old key, and every object
// of t's namespace that carries the old key, from the old key to the new; the state objects of
// a kubernetes:// backend are left to it. It returns how many objects it relabelled.
func (e *Engine) relabelAll(ctx context.Context, t Target, from string) (int, error) {
	r, ok := e.o.Kube.(relabeler)
	if !ok {
		return 0, fmt.Errorf("%s: the cluster client cannot relabel objects", t.Group.Ident())
	}
	live, err := e.o.Kube.ListManaged(ctx, t.Namespace, lane.GroupSelector(from))
	if err != nil {
		return 0, err
	}
	n := 0
	for _, k := range slices.SortedFunc(maps.Keys(live), lane.DeleteOrder) {
		l := live[k].GetLabels()
		if l[spec.LabelGroup] != from || l[spec.LabelManagedBy] != spec.ManagedBy || l["app.kubernetes.io/component"] == "state" {
			continue
		}
		if err := r.Relabel(ctx, k, string(live[k].GetUID()), spec.LabelGroup, from, t.Group.Name); err != nil {
			return n, err
		}
		n++
	}
	ns, err := e.o.Kube.Namespace(ctx, t.Namespace)
	if err != nil || ns == nil || ns.GetLabels()[spec.LabelGroup] != from {
		return n, err
	}
	return n, r.Relabel(ctx, plan.Key{Kind: "Namespace", Name: t.Namespace}, string(ns.GetUID()), spec.LabelGroup, from, t.Group.Name)
}

// listOwn lists t's objects in its namespace by their label: those of the key t adopts too,
// relabelled.
func (e *Engine) listOwn(ctx context.Context, t Target) (map[plan.Key]*unstructured.Unstructured, error) {
	live, err := e.o.Kube.ListManaged(ctx, t.Namespace, lane.GroupSelector(t.Group.Name))
	if err != nil || t.adopt == nil {
		return live, err
	}
	old, err := e.o.Kube.ListManaged(ctx, t.Namespace, lane.GroupSelector(t.adopt.from))
	if err != nil {
		return nil, err
	}
	for k, u := range old {
		l := u.GetLabels()
		if r, ok := t.relabelled(u).(*unstructured.Unstructured); ok && l[spec.LabelGroup] == t.adopt.from && l["app.kubernetes.io/component"] != "state" {
			live[k] = r
		}
	}
	return live, nil
}

// adoptOp is the operation of the old key's lock an adoption holds.
func adoptOp(t Target) string { return "adopt as " + t.Group.Name }

// dropStaleAdoptLock removes the old key's lock that an adoption of t left (a run killed after
// it deleted the old state, before it unlocked): only when t's state says it was adopted from
// that key, no state is left under it, the lock is an adoption's as t, and it is stale by the
// lock's own rules (its process no longer runs on this host, or its Lease ran out). Any other
// lock stays, for `slipway state unlock`.
func (e *Engine) dropStaleAdoptLock(ctx context.Context, t Target) error {
	id := t.Group.Ident()
	if t.Legacy == nil || t.Store == nil || !id.PerApp() || id.LegacyKey() == t.Group.Name {
		return nil
	}
	info, err := t.Legacy.LockInfo(ctx)
	if err != nil || info == nil || info.Operation != adoptOp(t) {
		return err
	}
	stale := state.HolderLiveness(*info) == state.LivenessDead || (!info.Expires.IsZero() && time.Now().After(info.Expires))
	if !stale {
		return nil
	}
	doc, err := t.Store.Read(ctx)
	if err != nil || doc == nil || doc.AdoptedFrom != id.LegacyKey() {
		return err
	}
	if old, err := t.Legacy.Read(ctx); err != nil || old != nil {
		return err
	}
	if err := t.Legacy.Unlock(ctx, info.ID); err != nil {
		return fmt.Errorf("%s: remove the stale lock %s of key %s, left by an adoption: %w", id, info.ID, id.LegacyKey(), err)
	}
	e.emit(event.Event{Phase: event.PhaseApply, Message: fmt.Sprintf("removed the lock of key %s that an adoption as %s left (%s, its process is gone)", id.LegacyKey(), t.Group.Name, info.Who)})
	return nil
}

// adoptingStore is the deployment's state store as the lanes read it while an adoption is
// pending (a plan or status before apply): with no document of its own it reads the earlier
// release's as adopt will write it, as the root does (readAnyNamespace).
type adoptingStore struct {
	state.Store
	doc *state.Document
}

func (s adoptingStore) Read(ctx context.Context) (*state.Document, error) {
	d, err := s.Store.Read(ctx)
	if d == nil && err == nil {
		return s.doc, nil
	}
	return d, err
}

// Location is the store's own (lane.Locator), "" when it cannot say.
func (s adoptingStore) Location() string {
	if l, ok := s.Store.(lane.Locator); ok {
		return l.Location()
	}
	return ""
}
