package plan

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// Object is an object as read from the cluster: typed where the client knows its kind (a LIST
// of a built-in kind decodes into the struct of k8s.io/api), unstructured otherwise. Its
// metadata reads alike either way.
type Object interface {
	metav1.Object
	runtime.Object
}

// LiveStub stands for a live object the plan found unchanged while both were typed
// (SubsetBothTyped): what Compute reads of it (kind, name, labels, resource version) and the
// mark IsStub reads, so that nothing compares or sends it as the object.
func LiveStub(o Object) *unstructured.Unstructured {
	gvk := o.GetObjectKind().GroupVersionKind()
	u := Stub(gvk.GroupVersion().String(), gvk.Kind, o.GetNamespace(), o.GetName(), o.GetLabels())
	if rv := o.GetResourceVersion(); rv != "" {
		u.Object["metadata"].(map[string]any)["resourceVersion"] = rv
	}
	return u
}
