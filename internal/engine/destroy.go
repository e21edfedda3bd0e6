package engine

import (
	"context"
	"fmt"
	"time"
)

// Destroy removes the group's namespace with everything in it, claims included (FR-007),
// waits until it is gone and deletes the state. Images stay in the registry.
func (e *Engine) Destroy(ctx context.Context, t Target) error {
	if _, err := e.o.Kube.Ping(ctx); err != nil {
		return err
	}
	if err := e.checkOwner(ctx, t.Group.Name, t.Namespace); err != nil {
		return err
	}
	e.emit(Event{Phase: PhaseDestroy, Message: "deleting namespace " + t.Namespace + " and everything in it"})
	start := time.Now()
	if err := e.o.Kube.DeleteNamespaceAndWait(ctx, t.Namespace); err != nil {
		return err
	}
	e.emit(Event{Phase: PhaseDestroy, Message: fmt.Sprintf("namespace %s is gone (%s)", t.Namespace, time.Since(start).Round(100*time.Millisecond))})
	if t.Store != nil {
		if err := t.Store.Delete(context.WithoutCancel(ctx)); err != nil {
			return fmt.Errorf("group %s: the namespace is gone but the state was not deleted: %w", t.Group.Name, err)
		}
	}
	e.emit(Event{Phase: PhaseDone, Message: "destroyed; the images stay in the registry"})
	return nil
}
