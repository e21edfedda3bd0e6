package engine

import (
	"context"
	"fmt"
	"strings"

	"slipway.dev/slipway/internal/event"
)

// keepClaimsDone ends a destroy --keep-claims: the state stays, each node's record cut to its
// machine ID, its protection and what it knows of the volume (the version its data ran ready
// with, the copy it holds), so that a later apply reattaches the claims to nodes with the
// same machine IDs, still protected, and rolls them out as new (nothing of theirs runs). A
// copy forgotten here would stay on the volume with no step ever removing it, and a later
// migration would take it for its backup (issue 35 item 1).
func (e *Engine) keepClaimsDone(ctx context.Context, t Target, s *DestroyScope) error {
	doc, err := readState(ctx, t)
	if err != nil {
		return err
	}
	if doc != nil && t.Store != nil {
		for name, ns := range doc.Nodes {
			doc.Nodes[name] = keptRecord(ns)
		}
		if err := t.Store.Write(context.WithoutCancel(ctx), doc); err != nil {
			return fmt.Errorf("group %s: its objects but the claims are gone but the state was not written: %w", t.Group.Name, err)
		}
	}
	claims := make([]string, len(s.Claims))
	for i, k := range s.Claims {
		claims[i] = k.Name
	}
	e.emit(event.Event{Phase: event.PhaseDone, Message: fmt.Sprintf("destroyed all but the claims: %s, namespace %s and the state of group %s stay; apply reattaches the claims; the images stay in the registry",
		strings.Join(claims, ", "), t.Namespace, t.Group.Name)})
	return nil
}
