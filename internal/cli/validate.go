package cli

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"slipway.dev/slipway/internal/spec"
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
			if g.Output == "json" {
				return validateJSON(cmd, g.File, grp, errs)
			}
			if errs != nil {
				for _, e := range errs {
					fmt.Fprintln(cmd.ErrOrStderr(), e.Error())
				}
				return withExitCode(ExitError, nil)
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "%s: valid (%s)\n", g.File, plural(len(grp.Nodes), "node"))
			return err
		},
	}
}

// validateJSON prints one document on stdout, whether the file is valid or not.
func validateJSON(cmd *cobra.Command, file string, grp *spec.Group, errs spec.Errors) error {
	type jsonError struct {
		File    string `json:"file"`
		Line    int    `json:"line,omitempty"`
		Path    string `json:"path,omitempty"`
		Message string `json:"message"`
	}
	doc := struct {
		File   string      `json:"file"`
		Valid  bool        `json:"valid"`
		Group  string      `json:"group,omitempty"`
		Nodes  int         `json:"nodes"`
		Errors []jsonError `json:"errors,omitempty"`
	}{File: file, Valid: errs == nil}
	if grp != nil {
		doc.Group, doc.Nodes = grp.Name, len(grp.Nodes)
	}
	for _, e := range errs {
		doc.Errors = append(doc.Errors, jsonError{e.File, e.Line, e.Path, e.Msg})
	}
	enc := json.NewEncoder(cmd.OutOrStdout())
	enc.SetIndent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return err
	}
	if errs != nil {
		return withExitCode(ExitError, nil)
	}
	return nil
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}
