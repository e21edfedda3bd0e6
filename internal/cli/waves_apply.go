package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"slipway.dev/slipway/internal/event"
	"slipway.dev/slipway/internal/parallel"
	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/quote"
	"slipway.dev/slipway/internal/spec"
	"slipway.dev/slipway/internal/ui"
	"slipway.dev/slipway/internal/waves"
)

// ordered are the run's groups in dependency order, or in reverse (destroy).
func (r *wavesRun) ordered(reverse bool) []*waveUnit {
	var out []*waveUnit
	for _, w := range r.file.Order() {
		out = append(out, r.units[w.Name])
	}
	if reverse {
		for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
			out[i], out[j] = out[j], out[i]
		}
	}
	return out
}

// planAll plans every group, g.Parallelism at a time; any group's error stops the run before
// anything changed, naming the group. The plans share their reads (r.shared) and stop it
// sharing when they are made: what follows (apply, the health gate) reads the cluster anew.
func (r *wavesRun) planAll(ctx context.Context, kind func(u *waveUnit) (*plan.Plan, error)) error {
	if r.shared != nil {
		defer r.shared.Stop()
	}
	units := r.ordered(false)
	errs := make([]error, len(units))
	parallel.ForEach(r.g.Parallelism, parallel.Indexes(len(units)), func(i int) {
		p, err := kind(units[i])
		if err != nil {
			errs[i] = fmt.Errorf("group %s: %w", units[i].w.Name, err)
		}
		units[i].plan = p
	})
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("waves file %s: %w", r.file.Path, err)
	}
	return nil
}

// plans are the groups' plans in order (reverse: destroy's).
func (r *wavesRun) plans(reverse bool) []ui.WavePlan {
	var out []ui.WavePlan
	for _, u := range r.ordered(reverse) {
		out = append(out, ui.WavePlan{WaveGroup: u.group(), Plan: u.plan})
	}
	return out
}

func (u *waveUnit) group() ui.WaveGroup {
	return ui.WaveGroup{Name: u.w.Name, File: u.w.File, Target: u.w.Target, Namespace: u.s.ns, DependsOn: u.w.DependsOn}
}

func (r *wavesRun) changes() (n int) {
	for _, u := range r.units {
		if u.plan.HasChanges() {
			n++
		}
	}
	return n
}

// wavesPlan is `plan` of a waves file: one plan of every group, in order.
func wavesPlan(cmd *cobra.Command, g *Globals, f *waves.File, destroy, detailed bool) error {
	r, err := openWaves(cmd, g, f, !destroy, true)
	if err != nil {
		return err
	}
	r.printer.Close()
	ctx := cmd.Context()
	err = r.planAll(ctx, func(u *waveUnit) (*plan.Plan, error) {
		if destroy {
			return u.s.engine.PlanDestroy(ctx, u.s.target)
		}
		return u.s.engine.Plan(ctx, u.s.target)
	})
	if err != nil {
		return err
	}
	if g.Output == "json" {
		err = ui.WavesPlanJSON(r.stdout, f.Path, r.plans(destroy))
	} else {
		ui.WavesPlan(r.stdout, r.plans(destroy), g.planOptions(r.stdout))
	}
	if err == nil && detailed && r.changes() > 0 {
		return withExitCode(ExitChanges, nil)
	}
	return err
}

// wavesApply is `apply` of a waves file: lock and plan every group, print one plan in order,
// then apply group by group in dependency order, each started once the groups it depends on
// are applied and healthy.
func wavesApply(cmd *cobra.Command, g *Globals, f *waves.File, yes bool, lockTimeout time.Duration) error {
	r, err := openWaves(cmd, g, f, true, true)
	if err != nil {
		return err
	}
	defer func() { r.printer.Close() }()
	return r.guard(cmd.Context(), func(ctx context.Context) (err error) {
		if err := r.lock(ctx, "apply", lockTimeout, r.ordered(false)); err != nil {
			return err
		}
		defer func() { err = errors.Join(err, r.unlockAll()) }()
		if err := r.planAll(ctx, func(u *waveUnit) (*plan.Plan, error) { return r.planForApply(ctx, u) }); err != nil {
			return err
		}
		for _, u := range r.units {
			if !u.plan.HasChanges() { // the run changes only the others: their locks go now
				if err := r.unlock(u); err != nil {
					return err
				}
			}
		}
		if err := r.confirmApply(cmd, yes); err != nil {
			return err
		}
		out := waves.Run(ctx, f, g.Parallelism, false, func(ctx context.Context, w *waves.Group) error {
			return r.applyOne(ctx, r.units[w.Name])
		})
		r.report(out, "applied")
		return outcomeError(f, "applied", out)
	})
}

// planForApply plans u for apply and, when it has no changes, looks at its health at once.
// Both only read, so the look goes beside the plan rather than after it: a no-op run of 50
// groups waited on the two one after the other (issue 38). A plan with changes drops it.
func (r *wavesRun) planForApply(ctx context.Context, u *waveUnit) (*plan.Plan, error) {
	type look struct {
		healthy bool
		err     error
	}
	looked := make(chan look, 1)
	go func() {
		st, err := u.s.engine.Status(ctx, u.s.target)
		if err != nil {
			looked <- look{err: err}
			return
		}
		looked <- look{healthy: len(waves.Unhealthy(st)) == 0}
	}()
	p, err := u.s.engine.PlanForApply(ctx, u.s.target)
	l := <-looked
	if err == nil {
		p.Notes = append(p.Notes, moveNotes(p, u.s.group)...)
	}
	if err != nil || p.HasChanges() {
		return p, err
	}
	if l.err != nil {
		return nil, l.err
	}
	u.healthy = l.healthy
	return p, nil
}

// confirmApply prints the plans with changes (text: on stderr, as apply does) and asks once.
func (r *wavesRun) confirmApply(cmd *cobra.Command, yes bool) error {
	n := r.changes()
	if n == 0 {
		return nil
	}
	var changed []ui.WavePlan
	for _, p := range r.plans(false) {
		if p.Plan.HasChanges() {
			changed = append(changed, p)
		}
	}
	if r.g.Output != "json" || (!yes && readsTerminal(cmd.InOrStdin())) {
		r.printer.Close()
		ui.WavesPlan(r.stderr, changed, r.g.planOptions(r.stderr))
		r.printer = newPrinter(r.g, r.stdout, r.stderr)
	}
	for _, p := range changed {
		if err := p.Plan.Blocked(); err != nil {
			return fmt.Errorf("group %s: %w", p.Name, err)
		}
	}
	return confirm(yes, "apply", fmt.Sprintf("Apply these changes to %d group(s) of %s", n, r.file.Path), cmd.InOrStdin(), r.stderr)
}

// applyOne applies a group's plan when it has changes, releases its lock, and then holds its
// dependents back until it is healthy. A group with changes rolls out only while every group
// it waits on is healthy: they are looked at again just before it starts and once it is
// healthy itself (upstreamHealthy).
func (r *wavesRun) applyOne(ctx context.Context, u *waveUnit) error {
	fail := func(err error) error {
		r.say(u.w.Name, event.PhaseFailed, err.Error())
		return err
	}
	changes := u.plan.HasChanges()
	if changes {
		if err := r.upstreamHealthy(ctx, u); err != nil {
			return fail(errors.Join(fmt.Errorf("not applied: a group it depends on is not healthy any more: %w", err), r.unlock(u)))
		}
		r.say(u.w.Name, event.PhaseApply, "applying "+u.heading())
		err := u.s.engine.Apply(ctx, u.plan, u.s.target)
		if err = errors.Join(err, r.unlock(u)); err != nil {
			return fail(err)
		}
	}
	if u.healthy && !changes {
		r.say(u.w.Name, event.PhaseUnchanged, "No changes; healthy")
		return nil
	}
	if err := r.gate(ctx, u); err != nil {
		return fail(err)
	}
	if !changes {
		r.say(u.w.Name, event.PhaseUnchanged, "No changes; healthy")
		return nil
	}
	if err := r.upstreamHealthy(ctx, u); err != nil {
		return fail(fmt.Errorf("applied, but a group it depends on is not healthy any more (it went down while this one rolled out): %w", err))
	}
	r.say(u.w.Name, event.PhaseDone, "applied and healthy")
	return nil
}

// upstreamHealthy looks again at every group u waits on, directly or not, each as gate does
// (waiting while it settles). Their gates passed before u could start, but the run holds no
// lock of theirs (an unchanged group's goes once planned, a changed one's once applied, so
// that other runs of them need not wait for this one): a destroy of one alone, or kubectl, may
// have taken it down since. A dependency destroyed while its dependent rolled out ended the
// run "applied and healthy" (issue 46 item 7).
func (r *wavesRun) upstreamHealthy(ctx context.Context, u *waveUnit) error {
	up := r.file.Upstream(u.w.Name)
	errs := make([]error, len(up))
	parallel.ForEach(r.g.Parallelism, parallel.Indexes(len(up)), func(i int) {
		if err := r.gate(ctx, r.units[up[i]]); err != nil {
			errs[i] = fmt.Errorf("group %s is %w", up[i], err)
		}
	})
	return errors.Join(errs...)
}

// gate waits until the group is healthy (every node ready, names agreeing, no rollout set
// back), while it is still settling and for no longer than a node's rollout limit.
func (r *wavesRun) gate(ctx context.Context, u *waveUnit) error {
	limit := r.g.Timeout
	if limit <= 0 {
		limit = spec.DefaultRolloutTimeout
	}
	deadline := time.Now().Add(limit)
	for {
		st, err := u.s.engine.Status(ctx, u.s.target)
		if err != nil {
			return err
		}
		why := waves.Unhealthy(st)
		if len(why) == 0 {
			return nil
		}
		if !waves.Settling(st) || time.Now().After(deadline) {
			return fmt.Errorf("not healthy: %s", strings.Join(why, "; "))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not healthy: %s: %w", strings.Join(why, "; "), ctx.Err())
		case <-time.After(time.Second):
		}
	}
}

// report says what became of each group: blocked groups as events, and (text) one line per
// group on stdout, in order.
func (r *wavesRun) report(out []waves.Outcome, verb string) {
	for _, o := range out {
		if len(o.Stopped) > 0 {
			r.say(o.Group.Name, event.PhaseBlocked, "not "+verb+": "+stoppedBy(o, verb))
		}
	}
	if r.g.Output == "json" {
		return
	}
	r.printer.Close()
	r.printer = newPrinter(r.g, r.stdout, r.stderr)
	for _, o := range out {
		u := r.units[o.Group.Name]
		line := ""
		switch {
		case o.Failed():
			line = "failed (the error follows on stderr)."
		case len(o.Stopped) > 0:
			line = "not " + verb + ": " + stoppedBy(o, verb)
		case o.Err != nil:
			line = o.Err.Error()
		case verb == "destroyed":
			line = "destroyed."
		default:
			var b strings.Builder
			_ = ui.Applied(&b, u.plan)
			line = strings.TrimSpace(b.String())
		}
		fmt.Fprintf(r.stdout, "%s: %s\n", o.Group.Name, quote.Line(line)) // an error's text may carry the cluster's words
	}
}
