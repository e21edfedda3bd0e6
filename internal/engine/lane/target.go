package lane

import (
	"context"
	"fmt"

	"slipway.dev/slipway/internal/image"
	"slipway.dev/slipway/internal/spec"
	"slipway.dev/slipway/internal/state"
)

// Target is the group a verb works on.
type Target struct {
	Group     *spec.Group
	Namespace string
	// Jobs are the group's images: one per node (Name = node) and per service role
	// (Name = <node>-<role>).
	Jobs []image.Job
	// Store holds the group's state; the caller holds its lock for changing verbs.
	Store state.Store
	// KeepClaims is apply --keep-claims: the claims of nodes the plan removes stay
	// (plan.KeepClaims).
	KeepClaims bool
	// NamespaceFrom says where Namespace came from ("-n", "K8S_NAMESPACE", …), for the
	// refusal of a namespace other than the state's; MoveNamespace is --move-namespace: the
	// run moves the group there instead (issue 35 item 6).
	NamespaceFrom string
	MoveNamespace bool
	// Adopts is the key of an earlier release whose state the run adopts (issue 46: a plan
	// before apply moved it): the DNS records owned under it that the state lists are the
	// deployment's, as they are once the state records it adopted them (AdoptedFrom).
	Adopts string
}

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

// ReadState reads the state document of t, nil when none, and refuses one that records
// another namespace than t's (CheckNamespace): every verb that deploys, reads or removes the
// group reads its state here, before it changes anything.
func ReadState(ctx context.Context, t Target) (*state.Document, error) {
	doc, err := ReadAnyNamespace(ctx, t)
	if err != nil {
		return nil, err
	}
	return doc, CheckNamespace(doc, t)
}

// ReadAnyNamespace reads the state document of t, nil when none, whatever namespace it
// records: render's machine IDs and secret key are the group's in any namespace.
func ReadAnyNamespace(ctx context.Context, t Target) (*state.Document, error) {
	if t.Store == nil {
		return nil, nil
	}
	return t.Store.Read(ctx)
}

// Locator is a state store that can say where it keeps the state.
type Locator interface{ Location() string }

// CheckNamespace refuses doc when it records another namespace than t's and the run does not
// move the group. A state written before slipway recorded the namespace has none: the next
// apply records it.
func CheckNamespace(doc *state.Document, t Target) error {
	if doc == nil || doc.Namespace == "" || doc.Namespace == t.Namespace || t.MoveNamespace {
		return nil
	}
	where := ""
	if l, ok := t.Store.(Locator); ok {
		where = l.Location()
	}
	return &NamespaceError{Group: t.Group.Name, Where: where, Recorded: doc.Namespace, Target: t.Namespace, From: t.NamespaceFrom}
}

// PreflightError is a reason to stop before anything is pushed or changed.
type PreflightError struct{ Msg string }

func (e *PreflightError) Error() string { return e.Msg }
