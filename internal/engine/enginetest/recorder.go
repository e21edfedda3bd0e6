package enginetest

import (
	"context"

	"slipway.dev/slipway/internal/state"
)

// Recorder stands in for the engine's state recorder (lane.Recorder): the document in memory,
// written nowhere; Updates counts the writes and their reasons.
type Recorder struct {
	Doc     *state.Document
	Updates []string
}

// View runs f with the document.
func (r *Recorder) View(f func(d *state.Document)) { f(r.Doc) }

// Update changes the document with f and records when.
func (r *Recorder) Update(_ context.Context, when string, f func(d *state.Document)) error {
	f(r.Doc)
	r.Updates = append(r.Updates, when)
	return nil
}
