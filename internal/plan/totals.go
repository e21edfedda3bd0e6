package plan

import "slices"

// Totals are all of a plan's totals: its own (Counts) and then each lane's (LanePart.Counts,
// in the order of Lanes). HasChanges reads them, and a saved plan is refused when a plan made
// now adds up to other totals (the engine names those that moved, Moved).
type Totals struct {
	Counts
	Lanes []Count
}

// Totals returns the plan's own totals and the lanes'.
func (p *Plan) Totals() Totals {
	t := Totals{Counts: p.Counts()}
	for _, l := range p.Lanes() {
		t.Lanes = append(t.Lanes, l.Counts()...)
	}
	return t
}

// All are t's totals as Counts, the plan's own first: a key of `plan -o json`'s counts each
// and what it counts in words (ui writes the plan's own clauses itself: no Text).
func (t Totals) All() []Count {
	c := t.Counts
	return append([]Count{
		{Key: "push", N: c.Push, What: "images to push"},
		{Key: "create", N: c.Create, What: "objects to create"},
		{Key: "update", N: c.Update, What: "objects to update"},
		{Key: "replace", N: c.Replace, What: "objects to replace"},
		{Key: "delete", N: c.Delete, What: "objects to delete"},
		{Key: "conflict", N: c.Conflict, What: "conflicts"},
		{Key: "terminating", N: c.Terminating, What: "objects being deleted"},
	}, t.Lanes...)
}

// Zero reports whether every total is zero: apply would change nothing.
func (t Totals) Zero() bool {
	for _, c := range t.All() {
		if c.N != 0 {
			return false
		}
	}
	return true
}

// N is the total of key (a key of `plan -o json`'s counts, or an unlisted lane total such as
// "move"); 0 when none has it.
func (t Totals) N(key string) int {
	for _, c := range t.All() {
		if c.Key == key {
			return c.N
		}
	}
	return 0
}

// MovedTotal is a total that two plans count otherwise.
type MovedTotal struct {
	Key, What string // the total's (Count)
	Was, Now  int    // the earlier plan's and the later's
}

// Moved are the totals that now counts otherwise than t, in t's order, then those only now
// has (a total one of them lacks counts as zero there).
func (t Totals) Moved(now Totals) []MovedTotal {
	var moved []MovedTotal
	byKey := map[string]int{} // index in moved
	add := func(c Count, was, is int) {
		i, ok := byKey[c.Key]
		if !ok {
			i, byKey[c.Key] = len(moved), len(moved)
			moved = append(moved, MovedTotal{Key: c.Key, What: c.What})
		}
		moved[i].Was += was
		moved[i].Now += is
	}
	for _, c := range t.All() {
		add(c, c.N, 0)
	}
	for _, c := range now.All() {
		add(c, 0, c.N)
	}
	return slices.DeleteFunc(moved, func(m MovedTotal) bool { return m.Was == m.Now })
}

// Equal reports whether t and o count the same.
func (t Totals) Equal(o Totals) bool { return len(t.Moved(o)) == 0 }
