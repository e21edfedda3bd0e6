package engine

import (
	"context"
	"fmt"

	"slipway.dev/slipway/internal/kube"
	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/render"
)

// StalePlanError refuses a saved plan made against another state or cluster.
type StalePlanError struct{ Msg string }

func (e *StalePlanError) Error() string { return e.Msg }

// checkSerial refuses a plan made against another serial of the state.
func checkSerial(p *plan.Plan, serial int64) error {
	if serial != p.StateSerial {
		return &StalePlanError{fmt.Sprintf("plan for group %s was made at state serial %d, the state is now at %d: plan again", p.Group, p.StateSerial, serial)}
	}
	return nil
}

// CheckFresh refuses a saved plan when the state or a planned object moved since it was made.
func (e *Engine) CheckFresh(ctx context.Context, p *plan.Plan, t Target) error {
	// A saved plan with conflicts is refused for them, not as stale.
	if err := p.Blocked(); err != nil {
		return err
	}
	doc, err := readState(ctx, t)
	if err != nil {
		return err
	}
	var serial int64
	if doc != nil {
		serial = doc.Serial
	}
	if err := checkSerial(p, serial); err != nil {
		return err
	}
	live, err := e.o.Kube.ListManaged(ctx, p.Namespace, render.LabelGroup+"="+p.Group)
	if err != nil {
		return err
	}
	planned := map[plan.Key]bool{}
	for _, n := range p.Nodes {
		for _, c := range n.Changes {
			planned[c.Key] = true
			l := live[kube.Key(c.Key)]
			switch {
			case c.Action == plan.Create && l != nil:
				return &StalePlanError{fmt.Sprintf("plan: %s was created since the plan was made: plan again", c.Key)}
			case c.Action != plan.Create && (l == nil || l.GetResourceVersion() != c.ResourceVersion):
				return &StalePlanError{fmt.Sprintf("plan: %s changed in the cluster since the plan was made: plan again", c.Key)}
			}
		}
	}
	// An object the plan left alone must still be as it was: otherwise the plan is not the
	// truth any more.
	for _, d := range p.Desired {
		k := plan.KeyOf(d)
		if planned[k] || k.Kind == "Namespace" {
			continue
		}
		if l := live[kube.Key(k)]; l == nil || !plan.Subset(d.Object, l.Object) {
			return &StalePlanError{fmt.Sprintf("plan: %s changed in the cluster since the plan was made: plan again", k)}
		}
	}
	return nil
}
