package cli

import (
	"context"
	"errors"
	"time"

	"github.com/spf13/cobra"

	"slipway.dev/slipway/internal/engine"
	"slipway.dev/slipway/internal/state"
)

func init() { register(newDestroyCmd) }

func newDestroyCmd(g *Globals) *cobra.Command {
	var yes bool
	var opts engine.DestroyOptions
	var lockTimeout time.Duration
	cmd := &cobra.Command{
		Use:   "destroy",
		Short: "Remove the group's namespace (when slipway created it) or else only the group's objects, claims included unless --keep-claims; images stay",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if f, err := loadWaves(g); err != nil || f != nil {
				if err != nil {
					return err
				}
				return wavesDestroy(cmd, g, f, opts, yes, lockTimeout)
			}
			return inSession(cmd, g, false, func(ctx context.Context, s *session) error {
				// What goes is said before it goes: the namespace or only the group's objects, and
				// the state when it lives in that namespace.
				scope, err := s.engine.Scope(ctx, s.target, opts)
				if err != nil {
					return err
				}
				if err := confirm(yes, "destroy", "Destroy group "+s.group.Name+": "+scope.Describe(), cmd.InOrStdin(), cmd.ErrOrStderr()); err != nil {
					return err
				}
				var done *engine.DestroyScope
				err = withLock(ctx, g, s.backend, "destroy", lockTimeout, func(ctx context.Context) error {
					d, err := s.engine.Destroy(ctx, s.target, opts)
					if err == nil {
						done = d
					}
					return err
				})
				if done != nil && done.StateLocation != "" && errors.Is(err, state.ErrNotLocked) {
					// The lock was in the namespace that is gone: there is nothing left to unlock.
					return nil
				}
				return err
			})
		},
	}
	cmd.Flags().BoolVar(&yes, "yes", false, "destroy without asking (required without a terminal)")
	cmd.Flags().BoolVar(&opts.KeepClaims, "keep-claims", false, "remove everything but the claims (every node's /var/lib): the namespace and the state stay, and a later apply reattaches the claims")
	addLockTimeoutFlag(cmd.Flags(), &lockTimeout)
	addTargetFlag(cmd.Flags(), g)
	return cmd
}
