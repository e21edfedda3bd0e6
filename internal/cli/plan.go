package cli

import (
	"strings"

	"github.com/spf13/cobra"

	"slipway.dev/slipway/internal/ui"
)

func init() { register(newPlanCmd) }

func newPlanCmd(g *Globals) *cobra.Command {
	var detailed bool
	var out string
	cmd := &cobra.Command{
		Use:   "plan",
		Short: "Show what apply would do; push nothing, change nothing",
		Long: "plan builds the images (to know their digests), asks the registry which it lacks, reads the state and\n" +
			"the cluster, and prints per node the images to push and each object to create, update, replace or\n" +
			"delete, destructive ones marked. It writes nothing to the registry, the cluster or the state.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(g); err != nil {
				return err
			}
			s, err := openSession(cmd.Context(), g, true, cmd.OutOrStdout(), cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			p, err := s.engine.Plan(cmd.Context(), s.target)
			s.printer.Close()
			if err != nil {
				return err
			}
			if g.Output == "json" {
				err = ui.PlanJSON(cmd.OutOrStdout(), p)
			} else {
				ui.PlanWith(cmd.OutOrStdout(), p, g.planOptions(cmd.OutOrStdout()))
			}
			if err != nil {
				return err
			}
			if out != "" {
				if err := p.Write(out); err != nil {
					return err
				}
				cmd.PrintErrf("plan saved to %s: apply it with `slipway apply %s`\n", out, out)
			}
			if detailed && p.HasChanges() {
				return withExitCode(ExitChanges, nil)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&detailed, "detailed-exitcode", false, "exit 0 with no changes, 1 on error, 2 with changes")
	cmd.Flags().StringVar(&out, "out", "", "save the plan to `FILE`, for slipway apply FILE (also -out FILE)")
	return cmd
}

// NormalizeArgs lets `plan -out FILE` (SPEC §2, as in terraform) mean `plan --out FILE`:
// pflag reads a single dash as shorthands, which would make it `-o ut FILE`.
func NormalizeArgs(args []string) []string {
	out := make([]string, len(args))
	copy(out, args)
	for i, a := range out {
		if a == "--" {
			break
		}
		if a == "-out" || strings.HasPrefix(a, "-out=") {
			out[i] = "-" + a
		}
	}
	return out
}
