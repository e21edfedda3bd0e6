package cli

import (
	"errors"

	"github.com/spf13/cobra"

	"slipway.dev/slipway/internal/spec"
	"slipway.dev/slipway/internal/ui"
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
			"and the exit code is 1; a valid file prints \"<file>: valid (N nodes)\".",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
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
