package enginetest

import (
	"context"
	"errors"

	"slipway.dev/slipway/internal/state"
)

// ErrDiskFull is what a Store's writes fail with while Fail is set.
var ErrDiskFull = errors.New("disk full")

// Store is a state.Store in memory (at mem://test) whose writes fail while Fail is set.
type Store struct {
	Doc    *state.Document
	Fail   bool
	Writes int
}

func (m *Store) Read(context.Context) (*state.Document, error) { return m.Doc, nil }
func (m *Store) Delete(context.Context) error                  { m.Doc = nil; return nil }
func (m *Store) Location() string                              { return "mem://test" }

func (m *Store) Write(_ context.Context, d *state.Document) error {
	if m.Fail {
		return ErrDiskFull
	}
	m.Writes++
	d.Serial++
	cp := *d
	m.Doc = &cp
	return nil
}
