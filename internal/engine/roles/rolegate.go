package roles

import (
	"context"
	"errors"
	"fmt"
	"time"

	"slipway.dev/slipway/internal/engine/lane"
	"slipway.dev/slipway/internal/event"
	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/render"
	"slipway.dev/slipway/internal/state"
	"slipway.dev/slipway/internal/status"
)

// awaitReady waits, within the node's rollout limit, until the node's Deployment k is
// ready, for a run that starts roles without rolling the node out (its Deployment is already
// as desired: an earlier apply was killed during the rollout, say). Roles start only next to a
// ready node (SPEC §6 step 7). The outcome is recorded as the node's last rollout when the
// state does not say it already.
//
// It runs an await-ready step.
func (l *Lane) awaitReady(ctx context.Context, nr *lane.NodeRun, st plan.Step) error {
	rec, w, k, node := nr.Rec, nr.Watch, *st.Object, st.Node
	res := l.env.Wait(ctx, w, lane.WaitFor{Key: k, Since: time.Now(), Limit: st.Limit, Node: node, Check: status.Rollout})
	var img string
	if dep, _, _, _ := w.Deployment(k.Namespace, k.Name); dep != nil {
		img = render.RunningImage(dep.Spec.Template.Spec.Containers)
	}
	if res.Phase == status.Ready {
		hash := lane.TemplateHash(w, k)
		return rec.Update(ctx, "after waiting for deployment "+k.Name, func(d *state.Document) {
			ns := lane.NodeOf(d, node)
			if hash != "" {
				ns.ReadyTemplate = hash
			}
			if lr := ns.LastRollout; img != "" && (lr == nil || lr.Result != event.RolloutReady || lr.Digest != lane.DigestOf(img)) {
				ns.PreviousReady = img
				ns.LastRollout = lane.RolloutNow(event.RolloutReady, "", img)
			}
		})
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("interrupted while waiting for deployment %s before starting its roles: %w", k.Name, err)
	}
	why := res.Message
	if res.Reason != "" {
		why = res.Reason + ": " + res.Message
	}
	report := l.env.FailureReport(ctx, w, k, res)
	err := fmt.Errorf("deployment %s is not ready (%s): its roles stay stopped; the next apply tries again%s", k.Name, why, report)
	return errors.Join(err, lane.RecordFailed(ctx, rec, node, k.Name, img, why))
}
