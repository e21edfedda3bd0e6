package engine

import (
	"slices"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/spec"
)

// objectSet holds the plan's rendered objects for the executors of one apply. A node's
// objects are released once its steps have run: a 1,000-node apply held all 5,000 to its
// end (30–37 MB of its 72 MB heap at the peak, issue 17), while the watch caches grew with
// every node that became ready.
//
// An object the plan found unchanged while typed is a stub there (plan.IsStub): get converts
// it when an executor asks for it after all (a role started again, a Deployment followed).
type objectSet struct {
	mu       sync.Mutex
	byKey    map[plan.Key]*unstructured.Unstructured
	byNode   map[string][]plan.Key
	deferred plan.Deferred
}

func newObjectSet(objs []*unstructured.Unstructured, deferred plan.Deferred) *objectSet {
	s := &objectSet{byKey: make(map[plan.Key]*unstructured.Unstructured, len(objs)), byNode: map[string][]plan.Key{}, deferred: deferred}
	for _, d := range objs {
		k := plan.KeyOf(d)
		s.byKey[k] = d
		node := plan.Label(d, spec.LabelNode)
		s.byNode[node] = append(s.byNode[node], k)
	}
	return s
}

// get returns the object of k; nil when the plan has none, or its node was released.
func (s *objectSet) get(k plan.Key) *unstructured.Unstructured {
	s.mu.Lock()
	defer s.mu.Unlock()
	u := s.byKey[k]
	if plan.IsStub(u) {
		// Converting a rendered object does not fail (the plan converted its like); should it,
		// the stub stays and kube refuses to apply it, naming the object.
		if full, err := s.deferred.Object(k); err == nil {
			s.byKey[k] = full
			u = full
		}
	}
	return u
}

// keysOf are the keys of the objects of kind the set still holds, sorted.
func (s *objectSet) keysOf(kind string) []plan.Key {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []plan.Key
	for k := range s.byKey {
		if k.Kind == kind {
			out = append(out, k)
		}
	}
	slices.SortFunc(out, func(a, b plan.Key) int { return strings.Compare(a.String(), b.String()) })
	return out
}

// release drops node's objects: its steps have run.
func (s *objectSet) release(node string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, k := range s.byNode[node] {
		delete(s.byKey, k)
		delete(s.deferred, k)
	}
	delete(s.byNode, node)
}
