package cli

import (
	"context"

	"github.com/spf13/cobra"

	"slipway.dev/slipway/internal/ui"
)

func init() { register(newStatusCmd) }

// newStatusCmd is `slipway status` (SPEC §2): per node the desired and running digest, ready
// pods, roles and the last rollout's result. It reads the state and the cluster, takes no
// lock and changes nothing.
func newStatusCmd(g *Globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show per node the desired and running digest, ready pods, roles and the last rollout",
		Long: "status reads the state and the cluster and prints per node the digest the state wants, the digest\n" +
			"the Deployment runs, its ready pods, its roles, whether it is suspended, and how its last rollout\n" +
			"ended (\"rolled back to sha256:… at …: CrashLoopBackOff: …\"). It changes nothing and takes no lock.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if f, err := loadWaves(g); err != nil || f != nil {
				if err != nil {
					return err
				}
				return wavesStatus(cmd, g, f)
			}
			return inSession(cmd, g, false, func(ctx context.Context, s *session) error {
				st, err := s.engine.Status(ctx, s.target)
				if err != nil {
					return err
				}
				if g.Output == "json" {
					return ui.StatusJSON(cmd.OutOrStdout(), st)
				}
				ui.Status(cmd.OutOrStdout(), st)
				return nil
			})
		},
	}
	addTargetFlag(cmd.Flags(), g)
	return cmd
}
