package rollout

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"slipway.dev/slipway/internal/engine/lane"
	"slipway.dev/slipway/internal/kube"
	"slipway.dev/slipway/internal/plan"
)

// applyObjects runs an apply-objects step: the group's namespace and default-deny policy, or
// a node's policies, account, claim and Services, in the plan's order.
func (l *Lane) applyObjects(ctx context.Context, nr *lane.NodeRun, st plan.Step) error {
	for _, k := range st.Objects {
		c := nr.Change(k)
		if c == nil {
			return fmt.Errorf("%s: not in the plan's changes", k)
		}
		if _, err := l.applyObject(ctx, *c, nr.Object(k)); err != nil {
			return err
		}
	}
	return nil
}

// applyObject creates, updates or replaces one object (not a delete) and returns its
// generation after the apply, which a wait must see in its cache before it trusts the status
// there.
func (l *Lane) applyObject(ctx context.Context, c plan.Change, obj *unstructured.Unstructured) (int64, error) {
	if obj == nil {
		return 0, fmt.Errorf("%s: not in the plan's objects", c.Key)
	}
	ctx = context.WithoutCancel(ctx) // one API call: let it finish
	if c.Action == plan.Replace {
		if err := l.o.Kube.Delete(ctx, c.Key, c.UID); err != nil {
			return 0, err
		}
		if err := l.o.Kube.WaitGone(ctx, c.Key, 2*time.Minute); err != nil {
			return 0, err
		}
	}
	l.writes <- struct{}{}
	out, err := l.o.Kube.Apply(ctx, obj, kube.ApplyOptions{Force: true})
	<-l.writes
	if err != nil {
		return 0, err
	}
	return out.GetGeneration(), nil
}
