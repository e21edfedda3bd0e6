package engine

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"slipway.dev/slipway/internal/event"
	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/spec"
	"slipway.dev/slipway/internal/state"
)

// NamespaceError refuses a run whose namespace is not the one the group's state records
// (issue 35 item 6): -n, K8S_NAMESPACE, the file's namespace, a target or a deployment id
// naming another one would deploy a second copy of the group, with the same machine IDs,
// and leave the first one's objects behind.
type NamespaceError struct {
	Group, Where     string // the group and its state's location
	Recorded, Target string // the state's namespace and the run's
	From             string // where the run's namespace came from
}

func (e *NamespaceError) Error() string {
	from := ""
	if e.From != "" {
		from = " (from " + e.From + ")"
	}
	return fmt.Sprintf("group %s: the state (%s) records namespace %s, but this run's namespace is %s%s: the group would run twice and its objects in %s would be left behind; nothing was changed. "+
		"Run it with namespace %s, or move the group to %s: `slipway plan --move-namespace` shows the move, `slipway apply --move-namespace` makes it (its objects in %s but the claims go once every node runs ready in %s)",
		e.Group, e.Where, e.Recorded, e.Target, from, e.Recorded, e.Recorded, e.Target, e.Recorded, e.Target)
}

// readState reads the state document of t, nil when none, and refuses one that records
// another namespace than t's (checkNamespace): every verb that deploys, reads or removes the
// group reads its state here, before it changes anything.
func readState(ctx context.Context, t Target) (*state.Document, error) {
	doc, err := readAnyNamespace(ctx, t)
	if err != nil {
		return nil, err
	}
	return doc, checkNamespace(doc, t)
}

// readAnyNamespace reads the state document of t, nil when none, whatever namespace it
// records: render's machine IDs and secret key are the group's in any namespace.
func readAnyNamespace(ctx context.Context, t Target) (*state.Document, error) {
	if t.Store == nil {
		return nil, nil
	}
	doc, err := t.Store.Read(ctx)
	if doc == nil && err == nil && t.adopt != nil {
		return t.adopt.adoptedDoc(t.Group.Name), nil // as adopt will write it
	}
	return doc, err
}

// checkNamespace refuses doc when it records another namespace than t's and the run does not
// move the group. A state written before slipway recorded the namespace has none: the next
// apply records it.
func checkNamespace(doc *state.Document, t Target) error {
	if doc == nil || doc.Namespace == "" || doc.Namespace == t.Namespace || t.MoveNamespace {
		return nil
	}
	where := ""
	if l, ok := t.Store.(locator); ok {
		where = l.Location()
	}
	return &NamespaceError{Group: t.Group.Name, Where: where, Recorded: doc.Namespace, Target: t.Namespace, From: t.NamespaceFrom}
}

// moveSource is the namespace a plan of t moves the group from: the state's namespace when
// the run moves it (--move-namespace), or a move the state says is not finished; "" for none.
func moveSource(doc *state.Document, t Target) (string, error) {
	if doc == nil {
		return "", nil
	}
	from := ""
	if doc.Namespace != "" && doc.Namespace != t.Namespace {
		from = doc.Namespace // checkNamespace let it through: --move-namespace
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
func (e *Engine) planMove(ctx context.Context, t Target, doc *state.Document) (*plan.Move, error) {
	from, err := moveSource(doc, t)
	if from == "" || err != nil {
		return nil, err
	}
	live, err := e.o.Kube.ListManaged(ctx, from, groupSelector(t.Group.Name))
	if err != nil {
		return nil, err
	}
	m := &plan.Move{From: from}
	protected := protectedNodes(t.Group, doc)
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
	slices.SortFunc(m.Delete, func(a, b plan.Change) int { return deleteOrder(a.Key, b.Key) })
	slices.SortFunc(m.Claims, deleteOrder)
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
func (e *Engine) finishMove(ctx context.Context, p *plan.Plan, rec *recorder, failed *failures) error {
	m := p.Move
	if m == nil {
		return nil
	}
	if failed.count() > 0 || ctx.Err() != nil {
		e.emit(event.Event{Phase: event.PhaseApply, Message: fmt.Sprintf("the objects of group %s in namespace %s stay until every node runs ready in %s: the next apply deletes them", p.Group, m.From, p.Namespace)})
		return nil
	}
	if len(m.Delete) > 0 {
		e.emit(event.Event{Phase: event.PhasePrune, Message: fmt.Sprintf("removing the %d object(s) of group %s in namespace %s it moved from", len(m.Delete), p.Group, m.From)})
		if err := e.deleteAll(ctx, m.Delete); err != nil {
			return fmt.Errorf("group %s: moved to namespace %s, but its objects in %s were not all deleted (the next apply deletes them): %w", p.Group, p.Namespace, m.From, err)
		}
	}
	return rec.update(ctx, "of the move's end", func(d *state.Document) { d.MovedFrom = "" })
}
