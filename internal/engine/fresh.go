package engine

import (
	"context"
	"fmt"
	"strings"

	"slipway.dev/slipway/internal/engine/lane"
	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/state"
)

// StalePlanError refuses a saved plan made against another state or cluster.
type StalePlanError struct{ Msg string }

func (e *StalePlanError) Error() string { return e.Msg }

// checkSerial refuses a plan made against another state: another serial, or the same serial
// of another lineage (a state deleted and written again since). doc may be nil: no state.
func checkSerial(p *plan.Plan, doc *state.Document) error {
	var serial int64
	var lineage string
	if doc != nil {
		serial, lineage = doc.Serial, doc.Lineage
	}
	if serial != p.StateSerial {
		return &StalePlanError{fmt.Sprintf("plan for group %s was made at state serial %d, the state is now at %d: plan again", p.Group, p.StateSerial, serial)}
	}
	if lineage != p.StateLineage {
		return &StalePlanError{fmt.Sprintf("plan for group %s was made against state lineage %q, the state is now of lineage %q (made again since): plan again", p.Group, p.StateLineage, lineage)}
	}
	return nil
}

// CheckFresh refuses a saved plan when it is for another group or namespace, or when the
// state or a planned object moved since it was made.
func (e *Engine) CheckFresh(ctx context.Context, p *plan.Plan, t Target) error {
	if p.Group != t.Group.Name || p.Namespace != t.Namespace {
		return fmt.Errorf("saved plan is for group %s in namespace %s, not %s in %s", p.Group, p.Namespace, t.Group.Name, t.Namespace)
	}
	// A saved plan with conflicts is refused for them, not as stale.
	if err := p.Blocked(); err != nil {
		return err
	}
	doc, err := readState(ctx, t)
	if err != nil {
		return err
	}
	if err := checkSerial(p, doc); err != nil {
		return err
	}
	live, err := e.o.Kube.ListManaged(ctx, p.Namespace, lane.GroupSelector(p.Group))
	if err != nil {
		return err
	}
	planned := map[plan.Key]bool{}
	for _, n := range p.Nodes {
		for _, c := range n.Changes {
			planned[c.Key] = true
			l := live[c.Key]
			switch {
			case c.Action == plan.Create && l != nil:
				return &StalePlanError{fmt.Sprintf("plan: %s was created since the plan was made: plan again", c.Key)}
			case c.Action != plan.Create && (l == nil || l.GetResourceVersion() != c.ResourceVersion):
				return &StalePlanError{fmt.Sprintf("plan: %s changed in the cluster since the plan was made: plan again", c.Key)}
			}
		}
	}
	// An object the plan left alone must still be as it was: otherwise the plan is not the
	// truth any more. A stub says nothing of that: the objects are compared in full.
	if err := p.Materialize(); err != nil {
		return err
	}
	for _, d := range p.Desired {
		k := plan.KeyOf(d)
		if planned[k] || k.Kind == "Namespace" {
			continue
		}
		if l := live[k]; l == nil || !plan.Subset(d.Object, l.Object) {
			return &StalePlanError{fmt.Sprintf("plan: %s changed in the cluster since the plan was made: plan again", k)}
		}
	}
	return nil
}

// CheckSaved refuses a saved plan that is not what applying it now would do: the state or a
// planned object moved since it was made (CheckFresh), or a plan made now builds other images
// or changes other totals. Apply then carries out the saved plan itself: its objects and
// machine IDs are what was shown.
func (e *Engine) CheckSaved(ctx context.Context, saved *plan.Plan, t Target) error {
	if err := e.CheckFresh(ctx, saved, t); err != nil {
		return err
	}
	// The images are built again (they are reproducible) and must come out as planned.
	fresh, err := e.PlanForApply(ctx, t)
	if err != nil {
		return err
	}
	// The saved file has no key (it is never written out): the state's is the one the saved
	// plan was made with, since a saved plan of a group with secrets records it first.
	saved.SecretKey = fresh.SecretKey
	return samePlan(saved, fresh)
}

// samePlan checks that a plan made now does what the saved one said.
func samePlan(saved, fresh *plan.Plan) error {
	digests := map[string]string{}
	for _, im := range fresh.Images {
		digests[im.Name] = im.Digest
	}
	for _, im := range saved.Images {
		if digests[im.Name] != im.Digest {
			return fmt.Errorf("saved plan: image %s was planned as %s but builds as %s now: plan again", im.Name, im.Digest, digests[im.Name])
		}
	}
	if was, now := saved.Totals(), fresh.Totals(); !was.Equal(now) {
		return fmt.Errorf("saved plan: the cluster or the group file changed since the plan was made: %s: plan again", countsMoved(was, now))
	}
	return nil
}

// countsMoved says in words which totals differ between a saved plan and one made now, the
// plan's own and the lanes', e.g. "objects to create: 2 planned, 3 now; DNS record sets to
// publish, change or retire: 1 planned, 0 now".
func countsMoved(saved, now plan.Totals) string {
	var parts []string
	for _, m := range saved.Moved(now) {
		parts = append(parts, fmt.Sprintf("%s: %d planned, %d now", m.What, m.Was, m.Now))
	}
	return strings.Join(parts, "; ")
}
