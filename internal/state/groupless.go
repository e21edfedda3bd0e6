package state

import (
	"context"
	"fmt"
)

// groupless is a backend opened without a group: it names its location and lists (when the
// backend can), and refuses every Store and Locker call with ErrNoGroup, for all backends
// alike.
type groupless struct{ Backend }

// withoutGroup wraps b, opened without a group; a Lister stays one.
func withoutGroup(b Backend) Backend {
	g := groupless{b}
	if l, ok := b.(Lister); ok {
		return struct {
			groupless
			Lister
		}{g, l}
	}
	return g
}

func (g groupless) refuse(verb string) error {
	return fmt.Errorf("state %s: %s: %w", g.Location(), verb, ErrNoGroup)
}

func (g groupless) Read(context.Context) (*Document, error)    { return nil, g.refuse("read") }
func (g groupless) Write(context.Context, *Document) error     { return g.refuse("write") }
func (g groupless) Delete(context.Context) error               { return g.refuse("delete") }
func (g groupless) Lock(context.Context, Info) (string, error) { return "", g.refuse("lock") }
func (g groupless) Unlock(context.Context, string) error       { return g.refuse("unlock") }
func (g groupless) LockInfo(context.Context) (*Info, error)    { return nil, g.refuse("lock info") }
