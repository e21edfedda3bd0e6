package cli

import (
	"github.com/spf13/cobra"

	"slipway.dev/slipway/internal/ui"
)

func init() { register(newStatusCmd) }

// newStatusCmd is `slipway status` (SPEC §2): per node the desired and running digest, ready
// pods, roles and the last rollout's result. It reads the state and the cluster, takes no
// lock and changes nothing.
func newStatusCmd(g *Globals) *cobra.Command {
	return &cobra.Command{
		Use:   "status",
		Short: "Show per node the desired and running digest, ready pods, roles and the last rollout",
		Long: "status reads the state and the cluster and prints per node the digest the state wants, the digest\n" +
			"the Deployment runs, its ready pods, its roles, whether it is suspended, and how its last rollout\n" +
			"ended (\"rolled back to sha256:… at …: CrashLoopBackOff: …\"). It changes nothing and takes no lock.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(g); err != nil {
				return err
			}
			s, err := openSession(cmd.Context(), g, false, cmd.OutOrStdout(), cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			// The printer may be swapped (plan text between two views): close the last one.
			defer func() { s.printer.Close() }()
			st, err := s.engine.Status(cmd.Context(), s.target)
			if err != nil {
				return err
			}
			if g.Output == "json" {
				return ui.StatusJSON(cmd.OutOrStdout(), st)
			}
			ui.Status(cmd.OutOrStdout(), st)
			return nil
		},
	}
}
