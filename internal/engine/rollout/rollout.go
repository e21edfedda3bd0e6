package rollout

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"slipway.dev/slipway/internal/engine/lane"
	"slipway.dev/slipway/internal/event"
	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/render"
	"slipway.dev/slipway/internal/status"
)

// suspendedNote is the in-flight marker's message for a template applied while the group is
// suspended: it has not run, and resume rolls it out.
const suspendedNote = "applied while the group was suspended: resume rolls it out and waits for it"

// applyDeployment runs an apply-deployment step: it finds where a failed rollout goes back to
// (the step's Rollback), records the rollout in flight before the Deployment changes, so a run
// stopped at any point leaves a state whose next apply follows it again, and applies it. The
// await-rollout step that follows waits for it (SPEC §6 steps 5–6).
//
// While the group is suspended the template is applied at 0 replicas and nothing runs: the
// state keeps the rollout in flight (nothing became ready) and resume rolls it out.
func (l *Lane) applyDeployment(ctx context.Context, nr *lane.NodeRun, st plan.Step) error {
	k := *st.Object
	c := nr.Change(k)
	if c == nil {
		return fmt.Errorf("%s: not in the plan's changes", k)
	}
	obj := nr.Object(k)
	// Read before the Deployment changes: the live template, if it runs ready now; else the
	// last one that became ready, still in its ReplicaSet (an earlier apply was killed during
	// a rollout that never became ready). The await-rollout step's Rollback says whether a
	// failure goes back to it.
	prev := lane.RollbackTarget(nr.Watch, k, lane.ReadyTemplate(nr.Rec, st.Node))
	newImage := containerImage(obj, render.ContainerNode)
	templateChanges := c.Action != plan.Update || len(c.Diff) == 0 || plan.DiffTouches(c.Diff, "spec.template.")
	if !nr.Plan.Suspended || templateChanges {
		msg := ""
		if nr.Plan.Suspended {
			msg = suspendedNote
		}
		if m, ok := st.Payload.(plan.MigrationCopy); ok {
			if err := l.o.Migrate.Migrating(ctx, nr.Rec, st.Node, k.Name, m.Migration.To); err != nil {
				return err
			}
		}
		if err := lane.RecordInFlight(ctx, nr.Rec, st.Node, k.Name, newImage, msg); err != nil {
			return err
		}
	}
	l.env.Emit(event.Event{Node: st.Node, Phase: event.PhaseRollout, Message: fmt.Sprintf("%s %s (limit %s)", c.Action, k, l.o.Limit(nr.Node)), Desired: 1})
	since := time.Now()
	gen, err := l.applyObject(ctx, *c, obj)
	if err != nil {
		return err
	}
	lane.Set(&nr.Slots, appliedKey, &appliedRollout{key: k, image: newImage, prev: prev, gen: gen, since: since})
	return nil
}

// appliedKey is the node's slot of the rollout apply-deployment started, for await-rollout.
var appliedKey = lane.NewKey[*appliedRollout]("the rollout apply-deployment started")

// appliedRollout is what apply-deployment hands on to await-rollout.
type appliedRollout struct {
	key   plan.Key
	image string
	prev  *appsv1.Deployment // the last ready template before the apply; nil: none
	gen   int64              // the generation the apply returned
	since time.Time
}

// awaitRollout runs an await-rollout step: it follows the rollout the apply-deployment step
// started and, on failure, sets the Deployment back to the last pod template that became
// ready and fails with the reason (SPEC §6 step 6). At 0 replicas (suspended) it waits for
// nothing to run.
func (l *Lane) awaitRollout(ctx context.Context, nr *lane.NodeRun, st plan.Step) error {
	a := lane.Get(&nr.Slots, appliedKey)
	if a == nil || a.key != *st.Object {
		return fmt.Errorf("%s: await-rollout without its apply-deployment step", *st.Object)
	}
	k, w := a.key, nr.Watch
	// A stop asked now ends this step as a failure would: set back to the last template that
	// ran ready, so that a Ctrl-C never leaves the node on a template that is not ready
	// (issue 35 item 14). A first deploy has nothing to go back to: it stays in flight.
	f := lane.WaitFor{Key: k, MinGen: a.gen, Since: a.since, Limit: st.Limit, Node: st.Node, Check: status.Rollout}
	if st.Replicas > 0 && st.Rollback != plan.RollbackNone && a.prev != nil {
		f.OnStop, f.StopText = lane.StopSetsBack, ": setting it back to its last ready template; the run stops after that"
	}
	res := l.env.Wait(ctx, w, f)
	if st.Replicas == 0 {
		if res.Phase != status.Ready && ctx.Err() == nil {
			return fmt.Errorf("deployment %s: at 0 replicas while suspended: %s", k.Name, res.Message)
		}
		return ctx.Err()
	}
	o := Outcome{Node: st.Node, Deployment: k.Name, Image: a.image, Res: res, Prev: a.prev, Version: l.o.Migrate.TemplateVersion(nr.Object(k))}
	if st.Rollback == plan.RollbackNone {
		o.Prev = nil // created in this run: nothing ran before it
	}
	if res.Phase == status.Ready {
		o.Hash = lane.TemplateHash(w, k)
	}
	rollback := l.withConfigRestored(ctx, nr, podConfigHash(nr.Object(k)), l.env.SetBack(ctx, w, k, st.Limit, st.Node))
	return l.Settle(ctx, nr.Rec, o, rollback, func() string { return l.env.FailureReport(context.WithoutCancel(ctx), w, k, res) })
}

// containerImage returns the image of the named container of a Deployment.
func containerImage(d *unstructured.Unstructured, container string) string {
	for _, c := range containersOf(d) {
		m, _ := c.(map[string]any)
		if m["name"] == container {
			s, _ := m["image"].(string)
			return s
		}
	}
	return ""
}

// containersOf returns the containers of a Deployment's pod template as d holds them, not
// copied (unstructured.NestedSlice copies them deeply): the callers only read them.
func containersOf(d *unstructured.Unstructured) []any {
	v, _, _ := unstructured.NestedFieldNoCopy(d.Object, "spec", "template", "spec", "containers")
	cs, _ := v.([]any)
	return cs
}
