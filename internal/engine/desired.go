package engine

import (
	"errors"
	"runtime"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"slipway.dev/slipway/internal/kube"
	"slipway.dev/slipway/internal/parallel"
	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/render"
)

// desiredObjects are the group's objects as apply would apply them, typed: rendered with the
// images' digests, the machine IDs and the secret key, every Deployment at 0 while the group
// is suspended. in holds the lanes' part of render's input (lane.Renderer).
func desiredObjects(t Target, images []plan.Image, ids, versions map[string]string, key []byte, f features, suspended bool, in render.Input) ([]render.Object, error) {
	refs := map[string]string{}
	for _, im := range images {
		refs[im.Name] = im.Digest
	}
	in.Group, in.Namespace, in.Images, in.MachineIDs = t.Group, t.Namespace, refs, ids
	in.StopSignal, in.ServiceMonitors, in.StateVersions, in.SecretKey = f.stop, f.monitors, versions, key
	objs, err := render.Objects(in)
	if err != nil {
		return nil, err
	}
	if suspended {
		for _, o := range objs {
			if d, ok := o.(*appsv1.Deployment); ok {
				// A suspended group stays at 0 until resume; the file's replicas are not drift.
				// Its applied hash stays the file's: suspend and resume scale, they apply
				// nothing, and the comparison sees the replicas themselves.
				d.Spec.Replicas = new(int32)
			}
		}
	}
	return objs, nil
}

// convertedOrDeferred are the desired objects for the comparison: each one that is Subset of
// its live object while still typed (plan.SubsetTyped) as a stub, deferred and in unchanged,
// every other one converted to unstructured. Most of what a no-op plan spent on its own was converting
// objects it then found unchanged (issue 17). A Secret is always converted: apply fills its
// values in from the plan's object.
func convertedOrDeferred(objs []render.Object, live, foreign map[plan.Key]plan.Object) ([]*unstructured.Unstructured, plan.Deferred, map[plan.Key]bool, error) {
	desired := make([]*unstructured.Unstructured, len(objs))
	deferred := make([]func() (*unstructured.Unstructured, error), len(objs))
	keys := make([]plan.Key, len(objs)) // of the deferred ones
	errs := make([]error, len(objs))
	// On every core, in chunks: the comparison and the conversions hold the critical path.
	chunks := runtime.GOMAXPROCS(0)
	parallel.ForEach(chunks, parallel.Indexes(chunks), func(c int) {
		for i := c; i < len(objs); i += chunks {
			o := objs[i]
			gvk := o.GetObjectKind().GroupVersionKind()
			k := plan.Key{Kind: gvk.Kind, Namespace: o.GetNamespace(), Name: o.GetName()}
			if l := live[k]; l != nil && foreign[k] == nil && gvk.Kind != "Secret" && l.GetDeletionTimestamp() == nil &&
				sameAsLive(o, l) {
				desired[i] = plan.Stub(gvk.GroupVersion().String(), gvk.Kind, k.Namespace, k.Name, o.GetLabels())
				deferred[i], keys[i] = func() (*unstructured.Unstructured, error) { return kube.ToUnstructured(o) }, k
				continue
			}
			u, err := kube.ToUnstructured(o)
			objs[i] = nil // converted: the typed object can go while the others convert
			desired[i], errs[i] = u, err
		}
	})
	if err := errors.Join(errs...); err != nil {
		return nil, nil, nil, err
	}
	d, unchanged := plan.Deferred{}, map[plan.Key]bool{}
	for i, f := range deferred {
		if f != nil {
			d[keys[i]], unchanged[keys[i]] = f, true
		}
	}
	return desired, d, unchanged, nil
}

// sameAsLive reports whether the rendered object o is Subset of its live object l, neither
// turned into maps where both are typed (plan.SubsetBothTyped); where that declines, l is
// converted and compared as SubsetTyped does.
func sameAsLive(o render.Object, l plan.Object) bool {
	if u, ok := l.(*unstructured.Unstructured); ok {
		return plan.SubsetTyped(o, u.Object)
	}
	if plan.SubsetBothTyped(o, l) {
		return true
	}
	u, err := kube.AsUnstructured(l)
	return err == nil && plan.SubsetTyped(o, u.Object)
}

// liveMaps are the live objects as the plan's comparison takes them: those found unchanged
// while typed as stubs (plan.LiveStub), which hold what Compute reads of them; every other one
// unstructured, as Diff and the dry runs need it.
func liveMaps(live map[plan.Key]plan.Object, unchanged map[plan.Key]bool) (map[plan.Key]*unstructured.Unstructured, error) {
	out := make(map[plan.Key]*unstructured.Unstructured, len(live))
	for k, o := range live {
		if u, ok := o.(*unstructured.Unstructured); ok {
			out[k] = u
			continue
		}
		if unchanged[k] {
			out[k] = plan.LiveStub(o)
			continue
		}
		u, err := kube.AsUnstructured(o)
		if err != nil {
			return nil, err
		}
		out[k] = u
	}
	return out, nil
}
