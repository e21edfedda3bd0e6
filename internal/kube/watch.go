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

	"slipway.dev/slipway/internal/spec"
)

// Watch mirrors the Deployments, ReplicaSets, Pods, Events and claims of one namespace through
// one watch per kind, so any number of rollouts wait on the same five streams instead of
// polling.
type Watch struct {
	factory informers.SharedInformerFactory
	deps    cache.SharedIndexInformer
	rss     cache.SharedIndexInformer
	pods    cache.SharedIndexInformer
	events  cache.SharedIndexInformer
	claims  cache.SharedIndexInformer
	stop    chan struct{}

	// Wakeups wake, per Deployment name, at the next change of anything of that Deployment
	// (Changed): a rollout wakes for its own objects only. With 200 nodes waiting, waking all
	// of them on every change of the namespace costs more CPU than the control plane, on the
	// same cores, can spare.
	Wakeups
}

// Wakeups hold, per name, a channel closed at the next Notify of that name. The zero value is
// ready to use.
type Wakeups struct {
	mu sync.Mutex
	m  map[string]chan struct{}
}

// Changed returns a channel closed at the next Notify(name).
func (w *Wakeups) Changed(name string) <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	ch, ok := w.m[name]
	if !ok {
		if w.m == nil {
			w.m = map[string]chan struct{}{}
		}
		ch = make(chan struct{})
		w.m[name] = ch
	}
	return ch
}

// Notify wakes whoever waits on Changed(name).
func (w *Wakeups) Notify(name string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if ch, ok := w.m[name]; ok {
		close(ch)
		delete(w.m, name)
	}
}

const (
	byName     = spec.LabelName // an index of the same name
	byInvolved = "involvedObject.name"
)

// DeploymentCache is what a rollout reads of a Watch; an unnamed interface so that a caller
// may declare the same one and have *Client satisfy its own interface.
type DeploymentCache = interface {
	Changed(name string) <-chan struct{}
	Deployment(ns, name string) (*appsv1.Deployment, []*appsv1.ReplicaSet, []*corev1.Pod, []*corev1.Event)
	ClaimPhase(ns, name string) corev1.PersistentVolumeClaimPhase
	Stop()
}

// ClaimWakeup is the name Changed wakes at the next change of claim name: a Deployment's
// name could be a claim's, so claims wake under a name of their own.
func ClaimWakeup(name string) string { return "PersistentVolumeClaim/" + name }

// Watch starts watching ns and returns once the caches are filled.
func (c *Client) Watch(ctx context.Context, ns string) (DeploymentCache, error) {
	f := informers.NewSharedInformerFactoryWithOptions(c.Clientset, 0, informers.WithNamespace(ns),
		informers.WithTransform(forTheWait))
	w := &Watch{
		factory: f,
		deps:    f.Apps().V1().Deployments().Informer(),
		rss:     f.Apps().V1().ReplicaSets().Informer(),
		pods:    f.Core().V1().Pods().Informer(),
		events:  f.Core().V1().Events().Informer(),
		claims:  f.Core().V1().PersistentVolumeClaims().Informer(),
		stop:    make(chan struct{}),
	}
	byLabel := cache.Indexers{byName: func(obj any) ([]string, error) {
		if v := nameLabel(obj); v != "" {
			return []string{v}, nil
		}
		return nil, nil
	}}
	for _, inf := range []cache.SharedIndexInformer{w.rss, w.pods} {
		if err := inf.AddIndexers(byLabel); err != nil {
			return nil, err
		}
	}
	if err := w.events.AddIndexers(cache.Indexers{byInvolved: func(obj any) ([]string, error) {
		if e, ok := obj.(*corev1.Event); ok {
			return []string{e.InvolvedObject.Name}, nil
		}
		return nil, nil
	}}); err != nil {
		return nil, err
	}
	owners := map[cache.SharedIndexInformer]func(any) string{
		w.deps: func(obj any) string {
			if d, ok := obj.(*appsv1.Deployment); ok {
				return d.Name
			}
			return ""
		},
		w.rss:    nameLabel,
		w.pods:   nameLabel,
		w.events: w.eventOwner,
		w.claims: func(obj any) string {
			if c, ok := obj.(*corev1.PersistentVolumeClaim); ok {
				return ClaimWakeup(c.Name)
			}
			return ""
		},
	}
	for inf, owner := range owners {
		notify := func(obj any) {
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			if name := owner(obj); name != "" {
				w.Notify(name)
			}
		}
		if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    notify,
			UpdateFunc: func(_, obj any) { notify(obj) },
			DeleteFunc: notify,
		}); err != nil {
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

// nameLabel is the app.kubernetes.io/name label of obj: the Deployment a pod or a
// ReplicaSet belongs to (render sets it on every pod template).
func nameLabel(obj any) string {
	if o, ok := obj.(interface{ GetLabels() map[string]string }); ok {
		return o.GetLabels()[byName]
	}
	return ""
}

// eventOwner maps an event to the Deployment of the pod, ReplicaSet or Deployment it is about.
func (w *Watch) eventOwner(obj any) string {
	e, ok := obj.(*corev1.Event)
	if !ok {
		return ""
	}
	var store cache.Store
	switch e.InvolvedObject.Kind {
	case "Deployment":
		return e.InvolvedObject.Name
	case "ReplicaSet":
		store = w.rss.GetStore()
	case "Pod":
		store = w.pods.GetStore()
	default:
		return ""
	}
	if o, ok, _ := store.GetByKey(e.InvolvedObject.Namespace + "/" + e.InvolvedObject.Name); ok {
		return nameLabel(o)
	}
	return ""
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

// ClaimPhase is the phase of the cached claim name, "" when the cache has none.
func (w *Watch) ClaimPhase(ns, name string) corev1.PersistentVolumeClaimPhase {
	if o, ok, _ := w.claims.GetStore().GetByKey(ns + "/" + name); ok {
		return o.(*corev1.PersistentVolumeClaim).Status.Phase
	}
	return ""
}

// Deployment returns the cached Deployment name (nil when absent) with its ReplicaSets and
// pods (those labelled app.kubernetes.io/name=name) and the events about them. The objects
// are copies: callers may keep them.
func (w *Watch) Deployment(ns, name string) (*appsv1.Deployment, []*appsv1.ReplicaSet, []*corev1.Pod, []*corev1.Event) {
	var dep *appsv1.Deployment
	if o, ok, _ := w.deps.GetStore().GetByKey(ns + "/" + name); ok {
		dep = o.(*appsv1.Deployment).DeepCopy()
	}
	// A pod or ReplicaSet of the name but another group's (a foreign pod labelled
	// app.kubernetes.io/name=<node>) is not the Deployment's: its readiness says nothing of
	// the rollout (issue 46 item 5). Slipway's pods carry the Deployment's group label.
	var group string
	if dep != nil {
		group = dep.Labels[spec.LabelGroup]
	}
	ours := func(l map[string]string) bool { return group == "" || l[spec.LabelGroup] == group }
	var rss []*appsv1.ReplicaSet
	objs, _ := w.rss.GetIndexer().ByIndex(byName, name)
	for _, o := range objs {
		if rs := o.(*appsv1.ReplicaSet); ours(rs.Labels) {
			rss = append(rss, rs.DeepCopy())
		}
	}
	var pods []*corev1.Pod
	objs, _ = w.pods.GetIndexer().ByIndex(byName, name)
	names := []string{name}
	for _, o := range objs {
		if !ours(o.(*corev1.Pod).Labels) {
			continue
		}
		p := o.(*corev1.Pod).DeepCopy()
		pods = append(pods, p)
		names = append(names, p.Name)
	}
	for _, rs := range rss {
		names = append(names, rs.Name)
	}
	var evs []*corev1.Event
	for _, n := range names {
		objs, _ := w.events.GetIndexer().ByIndex(byInvolved, n)
		for _, o := range objs {
			evs = append(evs, o.(*corev1.Event).DeepCopy())
		}
	}
	return dep, rss, pods, evs
}
