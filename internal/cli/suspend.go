package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"slipway.dev/slipway/internal/waves"
)

func init() {
	register(func(g *Globals) *cobra.Command { return newScaleCmd(g, true) })
	register(func(g *Globals) *cobra.Command { return newScaleCmd(g, false) })
}

// newScaleCmd is suspend (every Deployment to 0) or resume (back to its replicas), FR-022.
func newScaleCmd(g *Globals, suspend bool) *cobra.Command {
	var yes bool
	var lockTimeout time.Duration
	verb, short, what := "resume", "Set every Deployment of the group back to its replicas and wait", "Resume group "
	if suspend {
		verb, short, what = "suspend", "Set every Deployment of the group to 0 replicas and wait; claims, state and images stay", "Suspend group "
	}
	cmd := &cobra.Command{
		Use:   verb,
		Short: short,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if waves.IsFile(g.File) {
				return fmt.Errorf("%s: %s is a waves file: %s each group with -f its group file", verb, g.File, verb)
			}
			return inSession(cmd, g, false, func(ctx context.Context, s *session) error {
				if err := confirm(yes, verb, what+s.group.Name, cmd.InOrStdin(), cmd.ErrOrStderr()); err != nil {
					return err
				}
				return withLock(ctx, g, s.backend, verb, lockTimeout, func(ctx context.Context) error {
					return s.engine.Scale(ctx, s.target, suspend)
				})
			})
		},
	}
	cmd.Flags().BoolVar(&yes, "yes", false, verb+" without asking (required without a terminal)")
	addLockTimeoutFlag(cmd.Flags(), &lockTimeout)
	addTargetFlag(cmd.Flags(), g)
	return cmd
}
