package cli

import (
	"context"
	"time"

	"github.com/spf13/cobra"
)

func init() { register(newDestroyCmd) }

func newDestroyCmd(g *Globals) *cobra.Command {
	var yes bool
	var lockTimeout time.Duration
	cmd := &cobra.Command{
		Use:   "destroy",
		Short: "Remove the group's namespace and everything in it, claims included; images stay",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			s, err := openSession(ctx, g, false, cmd.OutOrStdout(), cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			// The printer may be swapped (plan text between two views): close the last one.
			defer func() { s.printer.Close() }()
			if err := confirm(yes, "destroy", "Destroy group "+s.group.Name+": delete namespace "+s.ns+" with every node's state", cmd.InOrStdin(), cmd.ErrOrStderr()); err != nil {
				return err
			}
			return withLock(ctx, g, s.backend, "destroy", lockTimeout, func(ctx context.Context) error {
				return s.engine.Destroy(ctx, s.target)
			})
		},
	}
	cmd.Flags().BoolVar(&yes, "yes", false, "destroy without asking (required without a terminal)")
	addLockTimeoutFlag(cmd.Flags(), &lockTimeout)
	return cmd
}
