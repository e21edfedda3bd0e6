package nsmove

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"slipway.dev/slipway/internal/engine/lane"
	"slipway.dev/slipway/internal/event"
	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/spec"
	"slipway.dev/slipway/internal/state"
)

// moveSource is the namespace a plan of t moves the group from: the state's namespace when
// the run moves it (--move-namespace), or a move the state says is not finished; "" for none.
func moveSource(doc *state.Document, t lane.Target) (string, error) {
	if doc == nil {
		return "", nil
	}
	from := ""
	if doc.Namespace != "" && doc.Namespace != t.Namespace {
		from = doc.Namespace // lane.CheckNamespace let it through: --move-namespace
	}
	if from != "" {
		for _, name := range slices.Sorted(maps.Keys(doc.Nodes)) {
			if ns := doc.Nodes[name]; ns != nil && len(ns.DNS) > 0 {
				// Their owner records name the namespace (SPEC §7): from another they are
				// someone else's.
				return "", fmt.Errorf("group %s: node %s has published DNS records (%s): they name namespace %s as their owner, so the group cannot move to %s with them; nothing was changed: retire them first (remove the names and apply), then move", t.Group.Name, name, ns.DNS[0].Name, from, t.Namespace)
			}
		}
	}
	if doc.MovedFrom != "" && doc.MovedFrom != t.Namespace {
		if from != "" {
			return "", fmt.Errorf("group %s: its move from namespace %s to %s is not finished: apply it in namespace %s first, then move it to %s", t.Group.Name, doc.MovedFrom, doc.Namespace, doc.Namespace, t.Namespace)
		}
		from = doc.MovedFrom
	}
	return from, nil
}

// planMove reads what a move of t from the namespace moveSource names deletes there: every
// object of the group but its claims, which stay (as `destroy --keep-claims` keeps them). A
// protected node's claim refuses the move: its /var/lib cannot follow it.
func (l *Lane) planMove(ctx context.Context, t lane.Target, doc *state.Document) (*plan.Move, error) {
	from, err := moveSource(doc, t)
	if from == "" || err != nil {
		return nil, err
	}
	live, err := l.kube.ListManaged(ctx, from, lane.GroupSelector(t.Group.Name))
	if err != nil {
		return nil, err
	}
	m := &plan.Move{From: from}
	protected := lane.ProtectedNodes(t.Group, doc)
	var kept []string
	for k, u := range live {
		if k.Kind != "PersistentVolumeClaim" {
			m.Delete = append(m.Delete, plan.Change{Key: k, Action: plan.Delete, ResourceVersion: u.GetResourceVersion(), UID: string(u.GetUID())})
			continue
		}
		m.Claims = append(m.Claims, k)
		if node := u.GetLabels()[spec.LabelNode]; protected[node] {
			kept = append(kept, node)
		}
	}
	if len(kept) > 0 {
		slices.Sort(kept)
		return nil, fmt.Errorf("group %s: moving it from namespace %s to %s would start node(s) %s on new claims while their protected claims (state.protect) stay in %s with their /var/lib; nothing was changed: move their data by hand, or drop state.protect and apply first",
			t.Group.Name, from, t.Namespace, strings.Join(kept, ", "), from)
	}
	slices.SortFunc(m.Delete, func(a, b plan.Change) int { return lane.DeleteOrder(a.Key, b.Key) })
	slices.SortFunc(m.Claims, lane.DeleteOrder)
	return m, nil
}

// moveNote says what a plan's move does, for the operator to read before confirming.
func moveNote(p *plan.Plan) string {
	m := p.Move
	claims := "no claims stay there"
	if len(m.Claims) > 0 {
		names := make([]string, len(m.Claims))
		for i, k := range m.Claims {
			names[i] = k.Name
		}
		claims = fmt.Sprintf("its claims %s stay there with every node's /var/lib (the nodes start in %s on new claims; delete them by hand once their data is no longer needed)", strings.Join(names, ", "), p.Namespace)
	}
	return fmt.Sprintf("group %s moves from namespace %s to %s: apply makes it in %s, then, once every node runs ready there, deletes its %d object(s) in %s; %s",
		p.Group, m.From, p.Namespace, p.Namespace, len(m.Delete), m.From, claims)
}

// finishMove ends an apply that moves the group: once every node runs ready in the new
// namespace, the group's objects in the old one go (each with the UID judged) and the state
// forgets the move; until then they stay, and the next apply deletes them.
func (l *Lane) finishMove(ctx context.Context, p *plan.Plan, rec lane.Recorder, failed int) error {
	m := p.Move
	if m == nil {
		return nil
	}
	if failed > 0 || ctx.Err() != nil {
		l.env.Emit(event.Event{Phase: event.PhaseApply, Message: fmt.Sprintf("the objects of group %s in namespace %s stay until every node runs ready in %s: the next apply deletes them", p.Group, m.From, p.Namespace)})
		return nil
	}
	if len(m.Delete) > 0 {
		l.env.Emit(event.Event{Phase: event.PhasePrune, Message: fmt.Sprintf("removing the %d object(s) of group %s in namespace %s it moved from", len(m.Delete), p.Group, m.From)})
		if err := l.env.DeleteAll(ctx, m.Delete); err != nil {
			return fmt.Errorf("group %s: moved to namespace %s, but its objects in %s were not all deleted (the next apply deletes them): %w", p.Group, p.Namespace, m.From, err)
		}
	}
	return rec.Update(ctx, "of the move's end", func(d *state.Document) { d.MovedFrom = "" })
}
