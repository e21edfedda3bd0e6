package engine

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"slipway.dev/slipway/internal/engine/lane"
	"slipway.dev/slipway/internal/event"
	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/state"
)

// DestroyScope is what destroy removes (SPEC §2, issue 11 item 3): the namespace with
// everything in it when slipway created it for the group; otherwise only the group's own
// objects, claims included; nothing when neither exists.
type DestroyScope struct {
	Group, Namespace string
	// OwnNamespace: the namespace carries the group's label, which slipway sets only on a
	// namespace it creates: it goes, with everything in it.
	OwnNamespace bool
	// Objects are the group's objects in a namespace slipway did not create, in delete order
	// (Deployments first, claims last); they go, the namespace and all else stay.
	Objects []plan.Key
	// StateLocation is set when the state is kept in the namespace that goes
	// (kubernetes://<namespace>): the state and its lock go with it.
	StateLocation string
	// KeepClaims is destroy --keep-claims (SPEC §6a): Objects are every object of the group
	// but its claims, Claims are the claims that stay, and the namespace and the state stay
	// so that a later apply reattaches the claims.
	KeepClaims bool
	Claims     []plan.Key
	// UIDs are the UIDs of Objects as judged the group's, and NamespaceUID the namespace's
	// when it goes: each delete carries its UID, so that an object (or a namespace) re-made by
	// someone else since is not deleted (issue 35 item 17).
	UIDs         map[plan.Key]string
	NamespaceUID string
}

// DestroyOptions are the flags of destroy.
type DestroyOptions struct {
	KeepClaims bool // remove everything but the claims (and so keep the namespace and the state)
}

// Empty reports whether destroy would delete nothing in the cluster.
func (s *DestroyScope) Empty() bool { return !s.OwnNamespace && len(s.Objects) == 0 }

// Describe is one sentence of what destroy deletes, for the confirmation and the log.
func (s *DestroyScope) Describe() string {
	switch {
	case s.KeepClaims:
		return fmt.Sprintf("delete the %d objects of group %s in namespace %s but not its %d claims: the claims (every node's state), the namespace and the state stay, and a later apply reattaches the claims", len(s.Objects), s.Group, s.Namespace, len(s.Claims))
	case s.OwnNamespace && s.StateLocation != "":
		return fmt.Sprintf("delete namespace %s and everything in it, every node's state included; the state of group %s (%s) is in that namespace and goes with it", s.Namespace, s.Group, s.StateLocation)
	case s.OwnNamespace:
		return fmt.Sprintf("delete namespace %s and everything in it, every node's state included", s.Namespace)
	case len(s.Objects) > 0:
		return fmt.Sprintf("delete the %d objects of group %s in namespace %s, claims (every node's state) included; slipway did not create the namespace: it and everything else in it stay", len(s.Objects), s.Group, s.Namespace)
	}
	return fmt.Sprintf("nothing of group %s in namespace %s to delete; only its state, if any, goes", s.Group, s.Namespace)
}

// forgetter is a state store whose lock lives in the cluster and is kept alive by renewals
// that can be stopped (the kubernetes backend).
type forgetter interface{ Forget() }

// Scope reads what Destroy would remove. It changes nothing. Without KeepClaims it refuses,
// with a *plan.ProtectedError, to delete the claim of a protected node (SPEC §6a).
func (e *Engine) Scope(ctx context.Context, t Target, o DestroyOptions) (*DestroyScope, error) {
	if _, err := e.o.Kube.Ping(ctx); err != nil {
		return nil, err
	}
	t, err := e.adopting(ctx, t)
	if err != nil {
		return nil, err
	}
	if err := e.checkOwner(ctx, t); err != nil {
		return nil, err
	}
	// Read first: a location holding another group's state is refused here, before destroy
	// deletes that state; and the state knows which removed nodes are protected.
	doc, err := readState(ctx, t)
	if err != nil {
		return nil, err
	}
	if err := e.refuseDestroy(t, doc); err != nil {
		return nil, err
	}
	if doc != nil && doc.MovedFrom != "" {
		return nil, fmt.Errorf("group %s: its move from namespace %s to %s is not finished (its objects in %s are not all deleted): run `slipway apply` to finish it, then destroy", t.Group.Name, doc.MovedFrom, t.Namespace, doc.MovedFrom)
	}
	s := &DestroyScope{Group: t.Group.Name, Namespace: t.Namespace, KeepClaims: o.KeepClaims}
	ns, err := t.relabelledNamespace(func() (*unstructured.Unstructured, error) { return e.o.Kube.Namespace(ctx, t.Namespace) })()
	if err != nil || ns == nil {
		return s, err
	}
	live, err := e.listOwn(ctx, t)
	if err != nil {
		return nil, err
	}
	// A shared namespace (sharedNamespace: true) holds other deployments' objects: it is
	// never deleted, only this deployment's objects are.
	own := ownsNamespace(ns, t.Group.Name) && !t.Group.SharedNamespace
	if own {
		if err := unlistedClaims(t, doc, live, o.KeepClaims); err != nil {
			return nil, err
		}
	}
	if !o.KeepClaims {
		gone := ""
		if own {
			gone = t.Namespace
		}
		p := &plan.Plan{Group: t.Group.Name, Namespace: t.Namespace, Destroy: true, Nodes: destroyChanges(live, gone)}
		if err := plan.Protect(p, lane.ProtectedNodes(t.Group, doc)); err != nil {
			return nil, err
		}
	}
	if own && !o.KeepClaims {
		s.OwnNamespace, s.NamespaceUID = true, string(ns.GetUID())
		if l, ok := t.Store.(lane.Locator); ok && l.Location() == "kubernetes://"+t.Namespace {
			s.StateLocation = l.Location()
		}
		return s, nil
	}
	s.UIDs = make(map[plan.Key]string, len(live))
	for k, u := range live {
		s.UIDs[k] = string(u.GetUID())
		if o.KeepClaims && k.Kind == "PersistentVolumeClaim" {
			s.Claims = append(s.Claims, k)
			continue
		}
		s.Objects = append(s.Objects, k)
	}
	slices.SortFunc(s.Objects, lane.DeleteOrder)
	slices.SortFunc(s.Claims, lane.DeleteOrder)
	return s, nil
}

// Destroy removes what Scope says, waits until it is gone and deletes the state. Images stay
// in the registry.
func (e *Engine) Destroy(ctx context.Context, t Target, o DestroyOptions) (*DestroyScope, error) {
	t, err := e.adopt(ctx, t) // a state of an earlier release is the deployment's first
	if err != nil {
		return nil, err
	}
	s, err := e.Scope(ctx, t, o)
	if err != nil {
		return nil, err
	}
	doc, err := readAnyNamespace(ctx, t)
	if err != nil {
		return nil, err
	}
	lt := t.lent()
	lt.KeepClaims = o.KeepClaims
	lateAfter, err := e.judgeLateLanes(ctx, lt, doc)
	if err != nil {
		return nil, err
	}
	e.emit(event.Event{Phase: event.PhaseDestroy, Message: s.Describe()})
	if err := e.destroyLanes(ctx, lt, doc); err != nil {
		return s, err
	}
	start := time.Now()
	switch {
	case s.OwnNamespace:
		if f, ok := t.Store.(forgetter); ok && s.StateLocation != "" {
			f.Forget() // its lock goes with the namespace
		}
		if err := e.o.Kube.DeleteNamespaceAndWait(ctx, t.Namespace, s.NamespaceUID); err != nil {
			return s, err
		}
		e.emit(event.Event{Phase: event.PhaseDestroy, Message: fmt.Sprintf("namespace %s is gone (%s)", t.Namespace, time.Since(start).Round(100*time.Millisecond))})
	case len(s.Objects) > 0:
		changes := make([]plan.Change, len(s.Objects))
		for i, k := range s.Objects {
			changes[i] = plan.Change{Key: k, Action: plan.Delete, UID: s.UIDs[k]}
		}
		if err := e.deleteAll(ctx, changes); err != nil {
			return s, err
		}
		e.emit(event.Event{Phase: event.PhaseDestroy, Message: fmt.Sprintf("%d objects of group %s are gone (%s); namespace %s stays", len(s.Objects), t.Group.Name, time.Since(start).Round(100*time.Millisecond), t.Namespace)})
	}
	if err := lateAfter(); err != nil { // once the nodes are gone
		return s, err
	}
	if s.KeepClaims {
		return s, e.keepClaimsDone(ctx, t, s)
	}
	if t.Store != nil {
		if err := t.Store.Delete(context.WithoutCancel(ctx)); err != nil {
			return s, fmt.Errorf("group %s: its objects are gone but the state was not deleted: %w", t.Group.Name, err)
		}
	}
	e.emit(event.Event{Phase: event.PhaseDone, Message: "destroyed; the images stay in the registry"})
	return s, nil
}

// unlistedClaims refuses a destroy that found no state yet would delete the namespace, on its
// group label alone, with claims of the group in it (issue 46 item 9): the label does not say
// they are this run's to delete. The
// old namespace of a --move-namespace keeps its claims for the operator to copy, and the
// group's state then records the new one; a destroy run where no state is would otherwise
// delete them with the namespace.
func unlistedClaims(t Target, doc *state.Document, live map[plan.Key]*unstructured.Unstructured, keepClaims bool) error {
	if doc != nil || keepClaims {
		return nil
	}
	var claims []string
	for k := range live {
		if k.Kind == "PersistentVolumeClaim" {
			claims = append(claims, k.Name)
		}
	}
	if len(claims) == 0 {
		return nil
	}
	slices.Sort(claims)
	return fmt.Errorf("group %s: no state here lists namespace %s, yet it holds the group's claims %s (each a node's /var/lib): destroy will not delete them on their label alone; run it with the state that deployed them (--state), delete them yourself (kubectl -n %s delete pvc …), or pass --keep-claims to remove everything else",
		t.Group.Name, t.Namespace, strings.Join(claims, ", "), t.Namespace)
}
