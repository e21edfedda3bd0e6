package kube

// The calls the kubernetes state backend (internal/state) needs: a Secret that holds the state
// and a Lease that locks it, each read and written with resourceVersion preconditions so that two
// runs racing on one object cannot both win. Plain types in, plain types out, so internal/state
// can define the interface it uses and test against a fake without knowing client-go.

import (
	"context"
	"errors"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// ErrObjectNotFound is wrapped by the state calls when the object (or its namespace) is absent.
var ErrObjectNotFound = errors.New("not found")

// ErrObjectConflict is wrapped by the state calls when a create finds the object already there
// or an update or delete finds a resourceVersion other than the one it was given.
var ErrObjectConflict = errors.New("changed concurrently")

// StateSecret is the part of a Secret the state backend reads and writes.
type StateSecret struct {
	Name            string
	Labels          map[string]string
	Annotations     map[string]string
	Data            map[string][]byte
	ResourceVersion string // precondition on update; set from the server on every read
}

// StateLease is the part of a coordination.k8s.io/v1 Lease the state backend uses as a lock.
type StateLease struct {
	Name            string
	Labels          map[string]string
	Annotations     map[string]string
	Holder          string // spec.holderIdentity; "" = free
	DurationSeconds int32
	AcquireTime     time.Time
	RenewTime       time.Time
	ResourceVersion string
}

// stateErr names the object and maps the API errors the backend branches on to the sentinels.
func stateErr(kind, ns, name, verb string, err error) error {
	switch {
	case apierrors.IsNotFound(err):
		return fmt.Errorf("%s %s: %s: %w: %w", kind, qualified(ns, name), verb, ErrObjectNotFound, err)
	case apierrors.IsAlreadyExists(err), apierrors.IsConflict(err):
		return fmt.Errorf("%s %s: %s: %w: %w", kind, qualified(ns, name), verb, ErrObjectConflict, err)
	}
	return fmt.Errorf("%s %s: %s: %w", kind, qualified(ns, name), verb, err)
}

func fromSecret(s *corev1.Secret) *StateSecret {
	return &StateSecret{Name: s.Name, Labels: s.Labels, Annotations: s.Annotations, Data: s.Data,
		ResourceVersion: s.ResourceVersion}
}

func toSecret(ns string, s *StateSecret) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: s.Name, Namespace: ns, Labels: s.Labels,
			Annotations: s.Annotations, ResourceVersion: s.ResourceVersion},
		Type: corev1.SecretTypeOpaque,
		Data: s.Data,
	}
}

// ListStateSecrets lists the Secrets of ns that carry every label of match.
func (c *Client) ListStateSecrets(ctx context.Context, ns string, match map[string]string) ([]StateSecret, error) {
	l, err := c.Clientset.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{
		LabelSelector: labels.SelectorFromSet(match).String()})
	if err != nil {
		return nil, stateErr("secrets", ns, "", "list", err)
	}
	out := make([]StateSecret, 0, len(l.Items))
	for i := range l.Items {
		out = append(out, *fromSecret(&l.Items[i]))
	}
	return out, nil
}

func fromLease(l *coordinationv1.Lease) *StateLease {
	out := &StateLease{Name: l.Name, Labels: l.Labels, Annotations: l.Annotations,
		ResourceVersion: l.ResourceVersion}
	if l.Spec.HolderIdentity != nil {
		out.Holder = *l.Spec.HolderIdentity
	}
	if l.Spec.LeaseDurationSeconds != nil {
		out.DurationSeconds = *l.Spec.LeaseDurationSeconds
	}
	if l.Spec.AcquireTime != nil {
		out.AcquireTime = l.Spec.AcquireTime.Time
	}
	if l.Spec.RenewTime != nil {
		out.RenewTime = l.Spec.RenewTime.Time
	}
	return out
}

func toLease(ns string, l *StateLease) *coordinationv1.Lease {
	out := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: l.Name, Namespace: ns,
		Labels: l.Labels, Annotations: l.Annotations, ResourceVersion: l.ResourceVersion}}
	if l.Holder != "" {
		h := l.Holder
		out.Spec.HolderIdentity = &h
	}
	if l.DurationSeconds > 0 {
		d := l.DurationSeconds
		out.Spec.LeaseDurationSeconds = &d
	}
	if !l.AcquireTime.IsZero() {
		out.Spec.AcquireTime = &metav1.MicroTime{Time: l.AcquireTime}
	}
	if !l.RenewTime.IsZero() {
		out.Spec.RenewTime = &metav1.MicroTime{Time: l.RenewTime}
	}
	return out
}

// StateObjects are the Secrets, or the Leases, of one namespace: each read and written with
// the resourceVersion preconditions of the state calls.
type StateObjects[V any] interface {
	// Get reads the object called name.
	Get(ctx context.Context, name string) (*V, error)
	// Create creates the object, whatever resourceVersion it carries; one that exists
	// already wraps ErrObjectConflict.
	Create(ctx context.Context, v *V) (*V, error)
	// Update replaces the object if its resourceVersion is still the one v carries.
	Update(ctx context.Context, v *V) (*V, error)
	// Delete deletes the object called name, only at resourceVersion when that is not "".
	Delete(ctx context.Context, name, resourceVersion string) error
}

// StateSecrets are the Secrets of ns.
func (c *Client) StateSecrets(ns string) StateObjects[StateSecret] {
	return stateObjects[*corev1.Secret, StateSecret]{c: c.Clientset.CoreV1().Secrets(ns), kind: "secret", ns: ns,
		from: fromSecret, to: toSecret}
}

// StateLeases are the Leases of ns.
func (c *Client) StateLeases(ns string) StateObjects[StateLease] {
	return stateObjects[*coordinationv1.Lease, StateLease]{c: c.Clientset.CoordinationV1().Leases(ns), kind: "lease", ns: ns,
		from: fromLease, to: toLease}
}

// typedClient is what client-go's typed client of one kind (Secrets(ns), Leases(ns)) offers the
// state calls.
type typedClient[T any] interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error)
	Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error)
	Update(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
}

// stateObjects are StateObjects over the typed client of the API kind T, whose plain form is V.
type stateObjects[T metav1.Object, V any] struct {
	c        typedClient[T]
	kind, ns string
	from     func(T) *V
	to       func(ns string, v *V) T
}

func (o stateObjects[T, V]) Get(ctx context.Context, name string) (*V, error) {
	out, err := o.c.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, stateErr(o.kind, o.ns, name, "get", err)
	}
	return o.from(out), nil
}

func (o stateObjects[T, V]) Create(ctx context.Context, v *V) (*V, error) {
	in := o.to(o.ns, v)
	in.SetResourceVersion("")
	out, err := o.c.Create(ctx, in, metav1.CreateOptions{FieldManager: FieldManager})
	if err != nil {
		return nil, stateErr(o.kind, o.ns, in.GetName(), "create", err)
	}
	return o.from(out), nil
}

func (o stateObjects[T, V]) Update(ctx context.Context, v *V) (*V, error) {
	in := o.to(o.ns, v)
	out, err := o.c.Update(ctx, in, metav1.UpdateOptions{FieldManager: FieldManager})
	if err != nil {
		return nil, stateErr(o.kind, o.ns, in.GetName(), "update", err)
	}
	return o.from(out), nil
}

func (o stateObjects[T, V]) Delete(ctx context.Context, name, resourceVersion string) error {
	if err := o.c.Delete(ctx, name, deleteOptions(resourceVersion)); err != nil {
		return stateErr(o.kind, o.ns, name, "delete", err)
	}
	return nil
}

// EnsureNamespace creates namespace name with labels unless it exists; an existing namespace
// is left as it is.
func (c *Client) EnsureNamespace(ctx context.Context, name string, labels map[string]string) error {
	_, err := c.Clientset.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
	if err == nil {
		return nil
	}
	if !apierrors.IsNotFound(err) {
		return stateErr("namespace", "", name, "get", err)
	}
	_, err = c.Clientset.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}, metav1.CreateOptions{FieldManager: FieldManager})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return stateErr("namespace", "", name, "create", err)
	}
	return nil
}

func deleteOptions(resourceVersion string) metav1.DeleteOptions {
	if resourceVersion == "" {
		return metav1.DeleteOptions{}
	}
	return metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &resourceVersion}}
}
