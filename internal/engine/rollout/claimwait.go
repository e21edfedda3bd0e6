package rollout

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"slipway.dev/slipway/internal/engine/lane"
	"slipway.dev/slipway/internal/event"
	"slipway.dev/slipway/internal/kube"
	"slipway.dev/slipway/internal/plan"
)

// awaitClaim runs an await-claim step: a new node's Deployment waits until its claim is bound,
// when the claim's StorageClass binds claims as they are made. A pod made before its claim is
// bound is unschedulable, and kube-scheduler tries every such pod again at each volume event:
// a burst of new nodes kept the scheduler and the API server busy with pods that could not
// run yet, and the first apply of 200 nodes lagged the cluster's floor (issue 17). With
// WaitForFirstConsumer a claim binds only once its pod is scheduled: there is nothing to wait
// for. Past the limit the Deployment goes ahead; its rollout says what the pod waits for.
func (l *Lane) awaitClaim(ctx context.Context, nr *lane.NodeRun, st plan.Step) error {
	k := *st.Object
	if !l.claimsBindImmediately(ctx, storageClassOf(nr.Object(k))) {
		return nil
	}
	deadline := time.NewTimer(st.Limit)
	defer deadline.Stop()
	for {
		changed := nr.Watch.Changed(kube.ClaimWakeup(k.Name))
		if nr.Watch.ClaimPhase(k.Namespace, k.Name) == corev1.ClaimBound {
			return nil
		}
		select {
		case <-changed:
		case <-deadline.C:
			l.env.Emit(event.Event{Node: st.Node, Phase: event.PhaseApply,
				Message: fmt.Sprintf("claim %s not bound after %s: the Deployment goes ahead", k.Name, st.Limit)})
			return nil
		case <-ctx.Done():
			return fmt.Errorf("interrupted while claim %s was not bound yet, before its Deployment: %w", k.Name, ctx.Err())
		}
	}
}

// storageClassOf is the StorageClass a rendered claim names, "" for the cluster's default.
func storageClassOf(claim *unstructured.Unstructured) string {
	if claim == nil {
		return ""
	}
	s, _, _ := unstructured.NestedString(claim.Object, "spec", "storageClassName")
	return s
}

// bindingModes caches, per StorageClass, whether its claims bind as they are made.
type bindingModes struct {
	mu        sync.Mutex
	immediate map[string]bool
}

// claimsBindImmediately asks the cluster once per StorageClass and run, holding the others
// that ask meanwhile (200 new nodes reach their claims at once); an answer it cannot give (no
// right to read StorageClasses, say) is no wait.
func (l *Lane) claimsBindImmediately(ctx context.Context, class string) bool {
	b := &l.binds
	b.mu.Lock()
	defer b.mu.Unlock()
	if v, ok := b.immediate[class]; ok {
		return v
	}
	ok, err := l.o.Kube.ClaimsBindImmediately(ctx, class)
	ok = ok && err == nil
	if b.immediate == nil {
		b.immediate = map[string]bool{}
	}
	b.immediate[class] = ok
	return ok
}
