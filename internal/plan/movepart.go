package plan

import "slipway.dev/slipway/internal/quote"

// movePart is the namespace move's part of a plan (--move-namespace): the group's objects it
// deletes in the old namespace, written as the nodes' changes are.
type movePart struct {
	m  *Move
	ns string // the namespace the group moves to
}

// Sections are the old namespace's deletions under it; none without a move.
func (mp movePart) Sections() []Section {
	if mp.m == nil {
		return nil
	}
	s := Section{Heading: "namespace " + quote.Line(mp.m.From) + " (the group moves out once every node runs ready in " +
		quote.Line(mp.ns) + "; its claims stay)"}
	for i := range mp.m.Delete {
		s.Rows = append(s.Rows, Row{Action: mp.m.Delete[i].Action, Change: &mp.m.Delete[i]})
	}
	return []Section{s}
}

// Counts are the move itself, unlisted: its deletions count among the plan's, and a move
// is a change even when it deletes nothing (apply records the new namespace in the state).
func (mp movePart) Counts() []Count {
	n := 0
	if mp.m != nil {
		n = 1
	}
	return []Count{{Key: "move", N: n, What: "namespace moves", Unlisted: true}}
}

// Applied is none: the move's deletions count among the plan's.
func (movePart) Applied() string { return "" }

var _ LanePart = movePart{}
