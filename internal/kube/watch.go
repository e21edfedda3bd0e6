package kube

import (
	"context"
	"fmt"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
)

// Watch mirrors the Deployments, ReplicaSets, Pods and Events of one namespace through one
// watch per kind, so any number of rollouts wait on the same four streams instead of polling.
type Watch struct {
	factory informers.SharedInformerFactory
	deps    cache.SharedIndexInformer
	rss     cache.SharedIndexInformer
	pods    cache.SharedIndexInformer
	events  cache.SharedIndexInformer
	stop    chan struct{}

	mu      sync.Mutex
	changed chan struct{} // closed and replaced on every change
}

const byName = "app.kubernetes.io/name"

// Watch starts watching ns and returns once the caches are filled.
func (c *Client) Watch(ctx context.Context, ns string) (*Watch, error) {
	f := informers.NewSharedInformerFactoryWithOptions(c.Clientset, 0, informers.WithNamespace(ns))
	w := &Watch{
		factory: f,
		deps:    f.Apps().V1().Deployments().Informer(),
		rss:     f.Apps().V1().ReplicaSets().Informer(),
		pods:    f.Core().V1().Pods().Informer(),
		events:  f.Core().V1().Events().Informer(),
		stop:    make(chan struct{}),
		changed: make(chan struct{}),
	}
	byLabel := cache.Indexers{byName: func(obj any) ([]string, error) {
		if o, ok := obj.(interface{ GetLabels() map[string]string }); ok {
			if v := o.GetLabels()[byName]; v != "" {
				return []string{v}, nil
			}
		}
		return nil, nil
	}}
	for _, inf := range []cache.SharedIndexInformer{w.rss, w.pods} {
		if err := inf.AddIndexers(byLabel); err != nil {
			return nil, err
		}
	}
	h := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { w.notify() },
		UpdateFunc: func(any, any) { w.notify() },
		DeleteFunc: func(any) { w.notify() },
	}
	for _, inf := range []cache.SharedIndexInformer{w.deps, w.rss, w.pods, w.events} {
		if _, err := inf.AddEventHandler(h); err != nil {
			return nil, err
		}
	}
	f.Start(w.stop)
	syncCtx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	for typ, ok := range f.WaitForCacheSync(syncCtx.Done()) {
		if !ok {
			w.Stop()
			return nil, fmt.Errorf("namespace %s: watch %v: caches did not sync", ns, typ)
		}
	}
	return w, nil
}

func (w *Watch) notify() {
	w.mu.Lock()
	close(w.changed)
	w.changed = make(chan struct{})
	w.mu.Unlock()
}

// Changed returns a channel closed at the next change of anything watched.
func (w *Watch) Changed() <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.changed
}

// Stop ends the watches.
func (w *Watch) Stop() {
	select {
	case <-w.stop:
	default:
		close(w.stop)
		w.factory.Shutdown()
	}
}

// Deployment returns the cached Deployment name (nil when absent) with its ReplicaSets and
// pods (those labelled app.kubernetes.io/name=name) and the namespace's events about them.
// The objects are copies: callers may keep them.
func (w *Watch) Deployment(ns, name string) (*appsv1.Deployment, []*appsv1.ReplicaSet, []*corev1.Pod, []*corev1.Event) {
	var dep *appsv1.Deployment
	if o, ok, _ := w.deps.GetStore().GetByKey(ns + "/" + name); ok {
		dep = o.(*appsv1.Deployment).DeepCopy()
	}
	var rss []*appsv1.ReplicaSet
	objs, _ := w.rss.GetIndexer().ByIndex(byName, name)
	for _, o := range objs {
		rss = append(rss, o.(*appsv1.ReplicaSet).DeepCopy())
	}
	var pods []*corev1.Pod
	objs, _ = w.pods.GetIndexer().ByIndex(byName, name)
	names := map[string]bool{name: true}
	for _, o := range objs {
		p := o.(*corev1.Pod).DeepCopy()
		pods = append(pods, p)
		names[p.Name] = true
	}
	for _, rs := range rss {
		names[rs.Name] = true
	}
	var evs []*corev1.Event
	for _, o := range w.events.GetStore().List() {
		e := o.(*corev1.Event)
		if names[e.InvolvedObject.Name] {
			evs = append(evs, e.DeepCopy())
		}
	}
	return dep, rss, pods, evs
}
