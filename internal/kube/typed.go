package kube

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"

	"slipway.dev/slipway/internal/plan"
)

// Typed is u in the client-go scheme's type of its kind, u itself for a kind it lacks: an
// object as ListManagedObjects gives it (the engine's stand-in cluster types its objects so).
func Typed(u *unstructured.Unstructured) plan.Object {
	obj, err := scheme.Scheme.New(u.GroupVersionKind())
	if err != nil {
		return u
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, obj); err != nil {
		return u
	}
	o, ok := obj.(plan.Object)
	if !ok {
		return u
	}
	return o
}
