package cli

import (
	"errors"

	"github.com/spf13/cobra"

	"slipway.dev/slipway/internal/spec"
	"slipway.dev/slipway/internal/ui"
	"slipway.dev/slipway/internal/waves"
)

func init() { register(newValidateCmd) }

// newValidateCmd is `slipway validate`: load and check the group file (SPEC §3), report every
// problem, touch nothing.
func newValidateCmd(g *Globals) *cobra.Command {
	return &cobra.Command{
		Use:   "validate",
		Short: "Check the group file and report every error; touches nothing",
		Long: "Loads the group file (-f, default slipway.yaml) strictly, merges its defaults and checks\n" +
			"every rule of the file. Each error is printed on stderr as FILE:LINE: FIELD.PATH: problem,\n" +
			"and the exit code is 1; a valid file prints \"<file>: valid (N nodes)\".\n" +
			"A waves file is checked with every group file it names (each problem at its own file and\n" +
			"line), each group's target, cycles, missing groups and groups listed twice or sharing a\n" +
			"namespace or state; a valid one prints \"<file>: valid (N groups, M nodes)\".",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if waves.IsFile(g.File) {
				return wavesValidate(g, cmd.OutOrStdout(), cmd.ErrOrStderr())
			}
			grp, err := spec.Load(g.File)
			var errs spec.Errors
			if err != nil && !errors.As(err, &errs) {
				return err
			}
			if err := ui.Validation(cmd.OutOrStdout(), cmd.ErrOrStderr(), g.File, grp, errs, g.Output == "json"); err != nil {
				return err
			}
			if errs != nil {
				return withExitCode(ExitError, nil)
			}
			return nil
		},
	}
}
