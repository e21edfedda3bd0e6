package waves

import (
	"context"
	"fmt"
	"slices"
)

// Outcome is what became of one group in a Run.
type Outcome struct {
	Group *Group
	// Ran: do was called. Err is then its error; without Ran, Err says why it did not start
	// (the run was cancelled), or it is nil and Stopped names why.
	Ran bool
	Err error
	// Stopped names the groups whose failure kept this one from running: each a group it
	// waits on, directly or through groups stopped in turn. Empty when it ran.
	Stopped []string
}

// Failed reports whether the group ran and failed.
func (o Outcome) Failed() bool { return o.Ran && o.Err != nil }

// Run calls do for each group of f once every group it waits on ran without error: the
// groups it depends on or, with reverse (destroy), the groups that depend on it. At most n
// run at once. A group waiting on one that failed, or that was stopped in turn, does not run:
// its Outcome names the failed groups; groups that do not wait on them go on. Once ctx is
// done no group starts. The outcomes are in the order the groups ran (or would have):
// Order, or its reverse.
func Run(ctx context.Context, f *File, n int, reverse bool, do func(ctx context.Context, g *Group) error) []Outcome {
	order := f.Order()
	waitsOn := func(g *Group) []string { return g.DependsOn }
	if reverse {
		slices.Reverse(order)
		waitsOn = func(g *Group) []string { return f.Dependents(g.Name) }
	}
	out := map[string]*Outcome{}
	finished := map[string]bool{}
	type result struct {
		name string
		err  error
	}
	done := make(chan result)
	running := 0
	for {
		for _, g := range order {
			if out[g.Name] != nil {
				continue
			}
			ready, stopped := true, []string(nil)
			for _, w := range waitsOn(g) {
				o := out[w]
				switch {
				case o == nil || (o.Ran && !finished[w]):
					ready = false
				case o.Failed():
					stopped = appendNew(stopped, w)
				case len(o.Stopped) > 0:
					stopped = appendNew(stopped, o.Stopped...)
				case !o.Ran:
					ready = false // not started: the run was cancelled
				}
			}
			switch {
			case len(stopped) > 0 && ready:
				out[g.Name] = &Outcome{Group: g, Stopped: stopped}
				finished[g.Name] = true
			case ready && running < n && ctx.Err() == nil:
				out[g.Name] = &Outcome{Group: g, Ran: true}
				running++
				go func(g *Group) { done <- result{g.Name, do(ctx, g)} }(g)
			}
		}
		if running == 0 {
			break
		}
		r := <-done
		running--
		out[r.name].Err = r.err
		finished[r.name] = true
	}
	res := make([]Outcome, 0, len(order))
	for _, g := range order {
		o := out[g.Name]
		if o == nil {
			o = &Outcome{Group: g, Err: fmt.Errorf("group %s: not started: %w", g.Name, context.Cause(ctx))}
			if ctx.Err() == nil { // cannot happen: every group starts or is stopped
				o.Err = fmt.Errorf("group %s: not started", g.Name)
			}
		}
		res = append(res, *o)
	}
	return res
}

func appendNew(list []string, names ...string) []string {
	for _, n := range names {
		if !slices.Contains(list, n) {
			list = append(list, n)
		}
	}
	return list
}
