package lane

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"slipway.dev/slipway/internal/plan"
)

// AsTyped is o as a *T: o itself when it is one, else its conversion; nil for nil, or when o
// is unstructured and does not convert.
func AsTyped[T any](o plan.Object) *T {
	if t, ok := any(o).(*T); ok {
		return t
	}
	switch t := o.(type) {
	case nil:
		return nil
	case *unstructured.Unstructured:
		if t == nil {
			return nil
		}
		out := new(T)
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(t.Object, out); err != nil {
			return nil
		}
		return out
	}
	return nil
}
