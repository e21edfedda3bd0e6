// Package sharedreads shares the reads of a wave run's engines (issue 38): the groups' objects,
// workloads and namespaces read once per kind across the run's namespaces, each engine given
// its own namespace's part. The engine root wraps Reads into a Cluster (engine.SharedReads).
package sharedreads

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"slipway.dev/slipway/internal/engine/lane"
	"slipway.dev/slipway/internal/kube"
	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/spec"
)

// A wave run plans every group at once, and a no-op run of 50 groups read the cluster per
// group: one LIST per kind in the group's namespace, three more for its health, its namespace
// twice; 680 requests, most of the run's time on a loaded machine (issue 38). Reads makes
// those reads once per kind across the run's namespaces, selected by the run's group names,
// and gives each group's engine its own namespace's part of them.

// Source is what Reads reads through; *kube.Client satisfies it.
type Source interface {
	ListManagedObjects(ctx context.Context, ns, selector string) (map[plan.Key]plan.Object, error)
	ListWorkloads(ctx context.Context, ns, selector string) (*kube.Workloads, error)
	Namespace(ctx context.Context, ns string) (*unstructured.Unstructured, error)
	// ListNamespaces lists the namespaces that carry selector, by name.
	ListNamespaces(ctx context.Context, selector string) (map[string]*unstructured.Unstructured, error)
}

var _ Source = (*kube.Client)(nil)

// sharedReadLimit bounds a shared read, which runs apart from the first caller's context: a
// caller that gives up (its group's preflight failed) must not fail the other groups' reads.
const sharedReadLimit = 2 * time.Minute

// Reads are the shared reads of the engines of one wave run: each registers its group and
// namespace (Cover) before the run reads anything; then the reads of a covered namespace by
// its group's label come from one read per kind across every covered namespace, made at the
// first such read, and its namespace from one LIST of the run's namespaces. Every other call,
// every read once Stop was called, and every read when a shared one failed (say it is
// forbidden across namespaces) go to the cluster as they are. A plan's read of a whole
// namespace gets the run's groups' objects only (labelled): it completes them itself when it
// needs an object none of them labels (listNamespace).
type Reads struct {
	src Source

	mu      sync.Mutex
	scope   map[string]string // namespace → the group whose namespace it is
	started bool              // a shared read began: the scope is as it will stay
	stopped bool

	objects    lazy[map[string]map[plan.Key]plan.Object] // by namespace
	workloads  lazy[map[string]*kube.Workloads]          // by namespace
	namespaces lazy[map[string]*unstructured.Unstructured]
	nsGets     map[string]*lazy[*unstructured.Unstructured] // a covered namespace the LIST lacks
}

// New returns the shared reads of a wave run over src.
func New(src Source) *Reads {
	return &Reads{src: src, scope: map[string]string{}, nsGets: map[string]*lazy[*unstructured.Unstructured]{}}
}

// Cover makes ns, the namespace of group, one the run reads at once. A namespace covered
// after the first read, or by two groups, is read as it is (not shared).
func (s *Reads) Cover(group, ns string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started {
		return
	}
	if g, ok := s.scope[ns]; ok && g != group {
		group = "" // two groups in one namespace: the run refuses it; never shared
	}
	s.scope[ns] = group
}

// Stop ends the sharing: the reads after it (an apply, its health gate) go to the cluster.
func (s *Reads) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopped = true
}

// covered is the group of ns when its reads are shared.
func (s *Reads) covered(ns string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.scope[ns]
	if s.stopped || g == "" {
		return "", false
	}
	s.started = true
	return g, true
}

// selector selects the objects of every covered group.
func (s *Reads) selector() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var groups []string
	for _, g := range s.scope {
		if g != "" {
			groups = append(groups, g)
		}
	}
	slices.Sort(groups)
	return spec.LabelGroup + " in (" + strings.Join(slices.Compact(groups), ",") + ")"
}

// ListManagedObjects serves a covered namespace's objects of its group from the shared read.
func (s *Reads) ListManagedObjects(ctx context.Context, ns, selector string) (map[plan.Key]plan.Object, error) {
	if g, ok := s.covered(ns); ok && selector == lane.GroupSelector(g) {
		if all, ok := s.labelledObjects(ctx, ns); ok {
			return ofGroup(all, g), nil
		}
	}
	return s.src.ListManagedObjects(ctx, ns, selector)
}

// Labelled returns the objects in ns that carry the label of one of the run's groups, and
// whether it could: false when ns is not covered or the shared read failed.
func (s *Reads) Labelled(ctx context.Context, ns string) (map[plan.Key]plan.Object, bool) {
	if _, ok := s.covered(ns); !ok {
		return nil, false
	}
	return s.labelledObjects(ctx, ns)
}

func (s *Reads) labelledObjects(ctx context.Context, ns string) (map[plan.Key]plan.Object, bool) {
	byNS, err := s.objects.get(ctx, func(ctx context.Context) (map[string]map[plan.Key]plan.Object, error) {
		all, err := s.src.ListManagedObjects(ctx, "", s.selector())
		out := map[string]map[plan.Key]plan.Object{}
		for k, o := range all {
			if out[k.Namespace] == nil {
				out[k.Namespace] = map[plan.Key]plan.Object{}
			}
			out[k.Namespace][k] = o
		}
		return out, err
	})
	if err != nil {
		return nil, false
	}
	return maps.Clone(byNS[ns]), true
}

// ofGroup are the objects of all that carry group's label.
func ofGroup(all map[plan.Key]plan.Object, group string) map[plan.Key]plan.Object {
	out := make(map[plan.Key]plan.Object, len(all))
	for k, o := range all {
		if o.GetLabels()[spec.LabelGroup] == group {
			out[k] = o
		}
	}
	return out
}

// ListWorkloads serves a covered namespace's workloads of its group from the shared read.
func (s *Reads) ListWorkloads(ctx context.Context, ns, selector string) (*kube.Workloads, error) {
	g, ok := s.covered(ns)
	if !ok || selector != lane.GroupSelector(g) {
		return s.src.ListWorkloads(ctx, ns, selector)
	}
	byNS, err := s.workloads.get(ctx, func(ctx context.Context) (map[string]*kube.Workloads, error) {
		wl, err := s.src.ListWorkloads(ctx, "", s.selector())
		if err != nil {
			return nil, err
		}
		return workloadsByNamespace(wl), nil
	})
	if err != nil {
		return s.src.ListWorkloads(ctx, ns, selector)
	}
	out := &kube.Workloads{}
	if wl := byNS[ns]; wl != nil {
		out.Deployments = labelledWith(wl.Deployments, g)
		out.ReplicaSets = labelledWith(wl.ReplicaSets, g)
		out.Pods = labelledWith(wl.Pods, g)
	}
	return out, nil
}

func workloadsByNamespace(wl *kube.Workloads) map[string]*kube.Workloads {
	out := map[string]*kube.Workloads{}
	of := func(ns string) *kube.Workloads {
		if out[ns] == nil {
			out[ns] = &kube.Workloads{}
		}
		return out[ns]
	}
	for _, d := range wl.Deployments {
		of(d.Namespace).Deployments = append(of(d.Namespace).Deployments, d)
	}
	for _, rs := range wl.ReplicaSets {
		of(rs.Namespace).ReplicaSets = append(of(rs.Namespace).ReplicaSets, rs)
	}
	for _, p := range wl.Pods {
		of(p.Namespace).Pods = append(of(p.Namespace).Pods, p)
	}
	return out
}

func labelledWith[T interface{ GetLabels() map[string]string }](objs []T, group string) []T {
	var out []T
	for _, o := range objs {
		if o.GetLabels()[spec.LabelGroup] == group {
			out = append(out, o)
		}
	}
	return out
}

// Namespace serves a covered namespace from one LIST of the run's groups' namespaces; one the
// LIST lacks (not made by slipway, or not there) is read once for every engine that asks.
func (s *Reads) Namespace(ctx context.Context, ns string) (*unstructured.Unstructured, error) {
	if _, ok := s.covered(ns); !ok {
		return s.src.Namespace(ctx, ns)
	}
	all, err := s.namespaces.get(ctx, func(ctx context.Context) (map[string]*unstructured.Unstructured, error) {
		return s.src.ListNamespaces(ctx, s.selector())
	})
	if err == nil && all[ns] != nil {
		return all[ns].DeepCopy(), nil
	}
	s.mu.Lock()
	get := s.nsGets[ns]
	if get == nil {
		get = &lazy[*unstructured.Unstructured]{}
		s.nsGets[ns] = get
	}
	s.mu.Unlock()
	u, err := get.get(ctx, func(ctx context.Context) (*unstructured.Unstructured, error) {
		return s.src.Namespace(ctx, ns)
	})
	if err != nil || u == nil {
		return nil, err
	}
	return u.DeepCopy(), nil
}

// lazy is one read, made at its first use and shared by every caller after it. It runs apart
// from the first caller's cancellation (sharedReadLimit); each caller waits on its own ctx.
type lazy[T any] struct {
	once sync.Once
	done chan struct{}
	val  T
	err  error
}

func (l *lazy[T]) get(ctx context.Context, read func(context.Context) (T, error)) (T, error) {
	l.once.Do(func() {
		l.done = make(chan struct{})
		go func() {
			defer close(l.done)
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), sharedReadLimit)
			defer cancel()
			l.val, l.err = read(rctx)
		}()
	})
	select {
	case <-l.done:
		return l.val, l.err
	case <-ctx.Done():
		var zero T
		return zero, fmt.Errorf("shared read: %w", ctx.Err())
	}
}
