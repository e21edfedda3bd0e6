package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"slipway.dev/slipway/internal/engine"
	"slipway.dev/slipway/internal/event"
	"slipway.dev/slipway/internal/state"
	"slipway.dev/slipway/internal/waves"
)

// wavesDestroy is `destroy` of a waves file: every group, in reverse order, a group only
// once every group that depends on it is gone.
func wavesDestroy(cmd *cobra.Command, g *Globals, f *waves.File, opts engine.DestroyOptions, yes bool, lockTimeout time.Duration) error {
	r, err := openWaves(cmd, g, f, false, false)
	if err != nil {
		return err
	}
	defer func() { r.printer.Close() }()
	ctx := cmd.Context()
	var what []string
	for _, u := range r.ordered(true) {
		scope, err := u.s.engine.Scope(ctx, u.s.target, opts)
		if err != nil {
			return fmt.Errorf("group %s: %w", u.w.Name, err)
		}
		what = append(what, fmt.Sprintf("  %s: %s", u.w.Name, scope.Describe()))
	}
	if err := confirm(yes, "destroy", fmt.Sprintf("Destroy the %d groups of %s, dependents first:\n%s\n", len(what), f.Path, strings.Join(what, "\n")), cmd.InOrStdin(), r.stderr); err != nil {
		return err
	}
	return r.guard(ctx, func(ctx context.Context) (err error) {
		if err := r.lock(ctx, "destroy", lockTimeout, r.ordered(false)); err != nil {
			return err
		}
		defer func() { err = errors.Join(err, r.unlockAll()) }()
		out := waves.Run(ctx, f, g.Parallelism, true, func(ctx context.Context, w *waves.Group) error {
			return r.destroyOne(ctx, r.units[w.Name], opts)
		})
		r.report(out, "destroyed")
		return outcomeError(f, "destroyed", out)
	})
}

func (r *wavesRun) destroyOne(ctx context.Context, u *waveUnit, opts engine.DestroyOptions) error {
	r.say(u.w.Name, event.PhaseDestroy, "destroying "+u.heading())
	d, err := u.s.engine.Destroy(ctx, u.s.target, opts)
	uerr := r.unlock(u)
	if d != nil && d.StateLocation != "" && errors.Is(uerr, state.ErrNotLocked) {
		uerr = nil // the lock was in the namespace that is gone, as for destroy of one group
	}
	if err = errors.Join(err, uerr); err != nil {
		r.say(u.w.Name, event.PhaseFailed, err.Error())
		return err
	}
	r.say(u.w.Name, event.PhaseDone, "destroyed")
	return nil
}
