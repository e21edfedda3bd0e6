package kube

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"

	"slipway.dev/slipway/internal/plan"
)

// ManagedKinds are the namespaced kinds slipway makes, in apply order.
var ManagedKinds = []schema.GroupVersionKind{
	{Group: "networking.k8s.io", Version: "v1", Kind: "NetworkPolicy"},
	{Version: "v1", Kind: "ServiceAccount"},
	{Version: "v1", Kind: "PersistentVolumeClaim"},
	{Version: "v1", Kind: "ConfigMap"},
	{Version: "v1", Kind: "Secret"},
	{Version: "v1", Kind: "Service"},
	// The routes of nodes behind the Gateway (SPEC §7); a cluster without the Gateway API
	// has none to list.
	TLSRouteKind,
	HTTPRouteKind,
	{Group: "apps", Version: "v1", Kind: "Deployment"},
	{Group: "policy", Version: "v1", Kind: "PodDisruptionBudget"},
	ServiceMonitorKind,
}

// ServiceMonitorKind is the Prometheus Operator's ServiceMonitor: a CRD, so a cluster may not
// serve it, and a list of it then finds nothing (optionalKinds).
var ServiceMonitorKind = schema.GroupVersionKind{Group: "monitoring.coreos.com", Version: "v1", Kind: "ServiceMonitor"}

// The Gateway API routes of nodes behind the Gateway (SPEC §7): CRDs too.
var (
	TLSRouteKind  = schema.GroupVersionKind{Group: "gateway.networking.k8s.io", Version: "v1", Kind: "TLSRoute"}
	HTTPRouteKind = schema.GroupVersionKind{Group: "gateway.networking.k8s.io", Version: "v1", Kind: "HTTPRoute"}
)

// optionalKinds are the managed kinds that a cluster may lack.
var optionalKinds = map[schema.GroupVersionKind]bool{ServiceMonitorKind: true, TLSRouteKind: true, HTTPRouteKind: true}

// Ping asks the server for its version: the cheapest proof that it is reachable and that the
// credentials work.
func (c *Client) Ping(ctx context.Context) (string, error) {
	c.mu.Lock()
	known := c.version
	c.mu.Unlock()
	if known != "" {
		return known, nil // it answered already: the requests that follow say if it no longer does
	}
	v, err := c.Clientset.Discovery().ServerVersion()
	if err != nil {
		return "", fmt.Errorf("cluster %s: unreachable: %w", c.Config.Host, err)
	}
	c.mu.Lock()
	c.version = v.GitVersion
	c.mu.Unlock()
	return v.GitVersion, nil
}

// RuntimeClassExists reports whether the RuntimeClass name exists.
func (c *Client) RuntimeClassExists(ctx context.Context, name string) (bool, error) {
	_, err := c.Clientset.NodeV1().RuntimeClasses().Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("runtimeclass %s: %w", name, err)
	}
	return true, nil
}

// Namespace returns the namespace ns as unstructured, or nil when it does not exist.
func (c *Client) Namespace(ctx context.Context, ns string) (*unstructured.Unstructured, error) {
	u, err := c.Dynamic.Resource(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}).Get(ctx, ns, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("namespace %s: %w", ns, err)
	}
	return u, nil
}

// ListManagedObjects lists the objects of ManagedKinds in ns ("": in every namespace) that
// carry selector (one LIST per kind), typed where the client knows the kind (listObjects). A
// Secret's values are blanked.
func (c *Client) ListManagedObjects(ctx context.Context, ns, selector string) (map[plan.Key]plan.Object, error) {
	out := map[plan.Key]plan.Object{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	errs := make([]error, len(ManagedKinds))
	for i, gvk := range ManagedKinds {
		wg.Go(func() {
			items, err := c.listObjects(ctx, gvk, ns, selector)
			if err != nil && optionalKinds[gvk] && meta.IsNoMatchError(err) {
				return // the cluster lacks the kind, so it holds none of them
			}
			if err != nil {
				errs[i] = fmt.Errorf("list %s in %s: %w", gvk.Kind, ns, err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			for _, o := range items {
				if o.GetLabels()[labelComponent] == componentState {
					continue // the state backend's Secret: not an object of the group's file
				}
				withoutSecretValues(o)
				out[plan.Key{Kind: gvk.Kind, Namespace: o.GetNamespace(), Name: o.GetName()}] = o
			}
		})
	}
	wg.Wait()
	return out, errors.Join(errs...)
}

// ListNamespaces lists the namespaces that carry selector, by name.
func (c *Client) ListNamespaces(ctx context.Context, selector string) (map[string]*unstructured.Unstructured, error) {
	items, err := c.listRaw(ctx, schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}, "", selector)
	if err != nil {
		return nil, fmt.Errorf("list namespaces: %w", err)
	}
	out := make(map[string]*unstructured.Unstructured, len(items))
	for _, u := range items {
		out[u.GetName()] = u
	}
	return out, nil
}

// ListManaged is ListManagedObjects with every object unstructured.
func (c *Client) ListManaged(ctx context.Context, ns, selector string) (map[plan.Key]*unstructured.Unstructured, error) {
	objs, err := c.ListManagedObjects(ctx, ns, selector)
	if err != nil {
		return nil, err
	}
	out := make(map[plan.Key]*unstructured.Unstructured, len(objs))
	for k, o := range objs {
		if out[k], err = AsUnstructured(o); err != nil {
			return nil, err
		}
		out[k].SetGroupVersionKind(o.GetObjectKind().GroupVersionKind())
	}
	return out, nil
}

// resourceOf is the client of object k's resource.
func (c *Client) resourceOf(k plan.Key) (dynamic.ResourceInterface, error) {
	gvk, err := gvkOf(k.Kind)
	if err != nil {
		return nil, err
	}
	return c.resourceFor(gvk, k.Namespace)
}

// Delete deletes the object k (background propagation); a missing object is no error. With
// uid, the UID of the object judged, one re-made since (another UID) is not deleted: the
// server refuses with a conflict (issue 35).
func (c *Client) Delete(ctx context.Context, k plan.Key, uid string) error {
	ri, err := c.resourceOf(k)
	if err != nil {
		return err
	}
	bg := metav1.DeletePropagationBackground
	opts := metav1.DeleteOptions{PropagationPolicy: &bg}
	if uid != "" {
		u := types.UID(uid)
		opts.Preconditions = &metav1.Preconditions{UID: &u}
	}
	err = ri.Delete(ctx, k.Name, opts)
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("%s: delete: %w", k, err)
	}
	return nil
}

func gvkOf(kind string) (schema.GroupVersionKind, error) {
	for _, g := range ManagedKinds {
		if g.Kind == kind {
			return g, nil
		}
	}
	if kind == "Namespace" {
		return schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}, nil
	}
	return schema.GroupVersionKind{}, fmt.Errorf("kind %s: not one slipway manages", kind)
}

// DeleteNamespaceAndWait deletes ns and waits (watching) until it is gone. With uid, the UID
// of the namespace judged, one re-made since by someone else is not deleted (the server
// refuses with a conflict), and the wait ends once the judged one is gone (issue 35).
func (c *Client) DeleteNamespaceAndWait(ctx context.Context, ns, uid string) error {
	nsc := c.Clientset.CoreV1().Namespaces()
	opts := metav1.DeleteOptions{}
	if uid != "" {
		u := types.UID(uid)
		opts.Preconditions = &metav1.Preconditions{UID: &u}
	}
	err := nsc.Delete(ctx, ns, opts)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("namespace %s: delete: %w", ns, err)
	}
	for {
		cur, err := nsc.Get(ctx, ns, metav1.GetOptions{})
		if apierrors.IsNotFound(err) || err == nil && uid != "" && string(cur.UID) != uid {
			return nil
		}
		if err != nil {
			return fmt.Errorf("namespace %s: %w", ns, err)
		}
		w, err := nsc.Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + ns, ResourceVersion: cur.ResourceVersion})
		if err != nil {
			return fmt.Errorf("namespace %s: watch: %w", ns, err)
		}
		gone := false
		for ev := range w.ResultChan() {
			if ev.Type == watch.Deleted {
				gone = true
				break
			}
		}
		w.Stop()
		if gone {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("namespace %s: waiting for deletion: %w", ns, ctx.Err())
		}
	}
}

// Scale sets the replicas of Deployment ns/name. It uses its own field manager: a partial
// apply under "slipway" would drop every other field slipway owns. The next full apply takes
// the field back.
// It returns the Deployment's generation after the change.
func (c *Client) Scale(ctx context.Context, ns, name string, replicas int32) (int64, error) {
	patch := fmt.Sprintf(`{"spec":{"replicas":%d}}`, replicas)
	d, err := c.Clientset.AppsV1().Deployments(ns).Patch(ctx, name, types.MergePatchType, []byte(patch),
		metav1.PatchOptions{FieldManager: FieldManager + "-scale"})
	if err != nil {
		return 0, fmt.Errorf("deployment %s/%s: scale to %d: %w", ns, name, replicas, err)
	}
	return d.Generation, nil
}

// PodLogTail returns the last n lines of a container's log, or "" when the API does not serve
// them (as with simulated nodes); it never blocks a rollout report for long. The lines are the
// container's own: a caller quotes them (quote.Lines) before they reach a terminal.
func (c *Client) PodLogTail(ctx context.Context, ns, pod, container string, n int64) string {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	rc, err := c.Clientset.CoreV1().Pods(ns).GetLogs(pod, &corev1.PodLogOptions{Container: container, TailLines: &n}).Stream(ctx)
	if err != nil {
		return ""
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, 64<<10))
	if err != nil {
		return ""
	}
	return strings.TrimRight(string(b), "\n")
}

// IsImmutableFieldError reports whether an apply failed because it changes an immutable field,
// which only a delete and re-create can do.
func IsImmutableFieldError(err error) bool {
	return apierrors.IsInvalid(err) && strings.Contains(err.Error(), "immutable")
}

// IsNamespaceNotFound reports whether a request failed because the namespace ns does not
// exist (a create in a namespace that apply has not made yet).
func IsNamespaceNotFound(err error, ns string) bool {
	var se apierrors.APIStatus
	if ns == "" || !apierrors.IsNotFound(err) || !errors.As(err, &se) {
		return false
	}
	d := se.Status().Details
	return d != nil && d.Kind == "namespaces" && d.Name == ns
}

// WaitGone waits until object k no longer exists (a replace deletes before it creates).
func (c *Client) WaitGone(ctx context.Context, k plan.Key, limit time.Duration) error {
	ri, err := c.resourceOf(k)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		_, err := ri.Get(ctx, k.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: %w", k, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
	return fmt.Errorf("%s: still there %s after its deletion", k, limit)
}

// The label the kubernetes state backend puts on its Secret (internal/state): ListManaged
// leaves that Secret out, so that no plan prunes or diffs the state.
const (
	labelComponent = "app.kubernetes.io/component"
	componentState = "state"
)

// withoutSecretValues blanks a Secret's values, keeping its keys (plan checks that a referenced
// key exists): slipway compares its own Secrets by the hash annotation it writes, and a value
// it never holds cannot reach a plan's diff, a saved plan or an error.
func withoutSecretValues(o plan.Object) {
	switch s := o.(type) {
	case *corev1.Secret:
		s.StringData = nil
		for k := range s.Data {
			s.Data[k] = []byte{}
		}
	case *unstructured.Unstructured:
		if s.GetKind() != "Secret" {
			return
		}
		unstructured.RemoveNestedField(s.Object, "stringData")
		data, ok := s.Object["data"].(map[string]any)
		if !ok {
			return
		}
		for k := range data {
			data[k] = ""
		}
	}
}
