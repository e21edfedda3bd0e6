package plan

import (
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Deferred converts, on demand, the rendered objects a plan found unchanged while they were
// still typed (SubsetTyped): in Desired each stands as a stub (Stub) that holds its kind,
// name and labels and nothing an apply could send. A no-op plan of 1,000 nodes converted its
// 5,000 objects to maps only to find every one unchanged (issue 17); an apply converts the
// few it touches after all (a role started again, a Deployment followed), a saved plan every
// one (Write).
type Deferred map[Key]func() (*unstructured.Unstructured, error)

// stubField marks a stub: a top-level field no API object has, so that a stub sent to an API
// server by mistake is refused by it too (kube.Client.Apply refuses it first).
const stubField = "slipway.dev/deferred"

// Stub stands for a deferred object in Desired: its identity and labels, for Compute and the
// steps, and the mark IsStub reads.
func Stub(apiVersion, kind, namespace, name string, labels map[string]string) *unstructured.Unstructured {
	md := map[string]any{"name": name}
	if namespace != "" {
		md["namespace"] = namespace
	}
	if len(labels) > 0 {
		l := make(map[string]any, len(labels))
		for k, v := range labels {
			l[k] = v
		}
		md["labels"] = l
	}
	return &unstructured.Unstructured{Object: map[string]any{"apiVersion": apiVersion, "kind": kind, "metadata": md, stubField: true}}
}

// IsStub reports whether u stands for a deferred object rather than being it.
func IsStub(u *unstructured.Unstructured) bool {
	return u != nil && u.Object[stubField] == true
}

// Materialize replaces every stub in p.Desired by its object.
func (p *Plan) Materialize() error {
	var errs []error
	for i, d := range p.Desired {
		if !IsStub(d) {
			continue
		}
		u, err := p.Deferred.Object(KeyOf(d))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		p.Desired[i] = u
	}
	p.Deferred = nil
	return errors.Join(errs...)
}

// Object converts the deferred object k.
func (d Deferred) Object(k Key) (*unstructured.Unstructured, error) {
	f := d[k]
	if f == nil {
		return nil, fmt.Errorf("%s: the plan holds a stub of it and not the object", k)
	}
	u, err := f()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", k, err)
	}
	return u, nil
}
