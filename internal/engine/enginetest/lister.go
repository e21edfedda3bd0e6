package enginetest

import (
	"context"
	"fmt"
	"slices"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	"slipway.dev/slipway/internal/kube"
	"slipway.dev/slipway/internal/plan"
)

// Lister plays the API server's reads over a Cluster's objects as the server answers them, by
// namespace ("": every one) and label selector (the Cluster's own reads ignore the selector),
// each read counted: what a wave run's shared reads (engine/sharedreads) read through. Before,
// when set, runs ahead of each read, outside the lock, and fails it with the error it returns:
// a read the API server forbids, or one held until the test lets it go.
type Lister struct {
	*Cluster
	Before func(ctx context.Context, read string) error
	mu     sync.Mutex
	reads  map[string]int
}

// NewLister returns a Lister over an empty Cluster.
func NewLister() *Lister { return &Lister{Cluster: NewCluster(), reads: map[string]int{}} }

// read counts read and runs Before.
func (l *Lister) read(ctx context.Context, read string) error {
	l.mu.Lock()
	l.reads[read]++
	before := l.Before
	l.mu.Unlock()
	if before != nil {
		return before(ctx, read)
	}
	return nil
}

// Reads returns the reads so far ("list objects in \"a\" by \"…\"": 1) and forgets them.
func (l *Lister) Reads() map[string]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.reads
	l.reads = map[string]int{}
	return out
}

// Put adds an object of kind to the cluster, with labels.
func (l *Lister) Put(apiVersion, kind, ns, name string, lbls map[string]string) {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	u.SetNamespace(ns)
	u.SetName(name)
	u.SetLabels(lbls)
	l.Cluster.Mu.Lock()
	defer l.Cluster.Mu.Unlock()
	l.Objects[plan.Key{Kind: kind, Namespace: ns, Name: name}] = u
}

// matching are copies of the objects of kinds in ns ("": every one) that carry selector.
func (l *Lister) matching(kinds map[string]bool, ns, selector string) ([]*unstructured.Unstructured, error) {
	sel, err := labels.Parse(selector)
	if err != nil {
		return nil, fmt.Errorf("stand-in API server: selector %q: %w", selector, err)
	}
	l.Cluster.Mu.Lock()
	defer l.Cluster.Mu.Unlock()
	var out []*unstructured.Unstructured
	for k, u := range l.Objects {
		if kinds[k.Kind] && (ns == "" || k.Namespace == ns) && sel.Matches(labels.Set(u.GetLabels())) {
			out = append(out, u.DeepCopy())
		}
	}
	return out, nil
}

// managedKinds are the kinds kube.Client.ListManagedObjects lists.
var managedKinds = func() map[string]bool {
	out := map[string]bool{}
	for _, gvk := range kube.ManagedKinds {
		out[gvk.Kind] = true
	}
	return out
}()

// ListManagedObjects lists the objects of kube.ManagedKinds in ns that carry selector.
func (l *Lister) ListManagedObjects(ctx context.Context, ns, selector string) (map[plan.Key]plan.Object, error) {
	if err := l.read(ctx, fmt.Sprintf("list objects in %q by %q", ns, selector)); err != nil {
		return nil, err
	}
	items, err := l.matching(managedKinds, ns, selector)
	if err != nil {
		return nil, err
	}
	out := map[plan.Key]plan.Object{}
	for _, u := range items {
		out[plan.Key{Kind: u.GetKind(), Namespace: u.GetNamespace(), Name: u.GetName()}] = TypedOrNot(u)
	}
	return out, nil
}

// ListWorkloads lists the Deployments, ReplicaSets and pods in ns that carry selector.
func (l *Lister) ListWorkloads(ctx context.Context, ns, selector string) (*kube.Workloads, error) {
	if err := l.read(ctx, fmt.Sprintf("list workloads in %q by %q", ns, selector)); err != nil {
		return nil, err
	}
	items, err := l.matching(map[string]bool{"Deployment": true, "ReplicaSet": true, "Pod": true}, ns, selector)
	if err != nil {
		return nil, err
	}
	out := &kube.Workloads{}
	for _, u := range items {
		var err error
		switch u.GetKind() {
		case "Deployment":
			out.Deployments, err = appendTyped(out.Deployments, u)
		case "ReplicaSet":
			out.ReplicaSets, err = appendTyped(out.ReplicaSets, u)
		case "Pod":
			out.Pods, err = appendTyped(out.Pods, u)
		}
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

func appendTyped[T appsv1.Deployment | appsv1.ReplicaSet | corev1.Pod](to []*T, u *unstructured.Unstructured) ([]*T, error) {
	o := new(T)
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, o); err != nil {
		return nil, fmt.Errorf("stand-in API server: %s %s/%s: %w", u.GetKind(), u.GetNamespace(), u.GetName(), err)
	}
	return append(to, o), nil
}

// Namespace reads namespace ns; nil when it is not there.
func (l *Lister) Namespace(ctx context.Context, ns string) (*unstructured.Unstructured, error) {
	if err := l.read(ctx, "get namespace "+ns); err != nil {
		return nil, err
	}
	u, err := l.Cluster.Namespace(ctx, ns)
	if u != nil {
		u = u.DeepCopy()
	}
	return u, err
}

// ListNamespaces lists the namespaces that carry selector, by name.
func (l *Lister) ListNamespaces(ctx context.Context, selector string) (map[string]*unstructured.Unstructured, error) {
	if err := l.read(ctx, fmt.Sprintf("list namespaces by %q", selector)); err != nil {
		return nil, err
	}
	items, err := l.matching(map[string]bool{"Namespace": true}, "", selector)
	if err != nil {
		return nil, err
	}
	out := map[string]*unstructured.Unstructured{}
	for _, u := range items {
		out[u.GetName()] = u
	}
	return out, nil
}

// Keys are the keys of objs as kind/namespace/name, sorted: what a test compares of a read.
func Keys(objs map[plan.Key]plan.Object) []string {
	var out []string
	for k := range objs {
		out = append(out, k.Kind+"/"+k.Namespace+"/"+k.Name)
	}
	slices.Sort(out)
	return out
}
