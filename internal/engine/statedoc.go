package engine

import (
	"context"

	"slipway.dev/slipway/internal/engine/lane"
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
