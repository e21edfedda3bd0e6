package engine

import (
	"context"

	"slipway.dev/slipway/internal/engine/lane"
	"slipway.dev/slipway/internal/engine/secrets"
	"slipway.dev/slipway/internal/spec"
	"slipway.dev/slipway/internal/state"
)

// readState reads the state document of t, nil when none, and refuses one that records
// another namespace than t's (lane.CheckNamespace): every verb that deploys, reads or removes
// the group reads its state here, before it changes anything.
func readState(ctx context.Context, t Target) (*state.Document, error) {
	doc, err := readAnyNamespace(ctx, t)
	if err != nil {
		return nil, err
	}
	return doc, lane.CheckNamespace(doc, t.lent())
}

// readAnyNamespace reads the state document of t, nil when none, whatever namespace it
// records: render's machine IDs and secret key are the group's in any namespace. A state to
// adopt (adopt.go) is read as adopt will write it.
func readAnyNamespace(ctx context.Context, t Target) (*state.Document, error) {
	doc, err := lane.ReadAnyNamespace(ctx, t.lent())
	if doc == nil && err == nil && t.Store != nil && t.adopt != nil {
		return t.adopt.adoptedDoc(t.Group.Name), nil // as adopt will write it
	}
	return doc, err
}

// RecordSecretKey returns the group's secret key, made and written into the state when it
// holds none: what a saved plan and render hash with must be there for the apply that
// follows. The caller holds the lock. A group without secrets: needs none: nil.
func (e *Engine) RecordSecretKey(ctx context.Context, t Target) ([]byte, error) {
	if !t.Group.HasOwnSecrets() {
		return nil, nil
	}
	doc, err := readAnyNamespace(ctx, t)
	if err != nil {
		return nil, err
	}
	if key, err := secrets.KeyOf(doc); key != nil || err != nil {
		return key, err
	}
	if doc == nil {
		doc = &state.Document{Group: t.Group.Name}
	}
	key, err := secrets.PlanKey(nil)
	if err != nil {
		return nil, err
	}
	if err := secrets.RecordKey(ctx, newRecorder(t.Store, doc), key); err != nil {
		return nil, err
	}
	return key, nil
}

// SecretKeyRecorded reports whether the state holds the group's secret key, or the group
// needs none (secrets.KeyRecorded).
func SecretKeyRecorded(g *spec.Group, doc *state.Document) bool { return secrets.KeyRecorded(g, doc) }
