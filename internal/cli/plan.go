package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"slipway.dev/slipway/internal/engine"
	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/ui"
)

func init() { register(newPlanCmd) }

func newPlanCmd(g *Globals) *cobra.Command {
	var detailed, destroy bool
	var out string
	cmd := &cobra.Command{
		Use:   "plan",
		Short: "Show what apply would do; push nothing, change nothing",
		Long: "plan builds the images (to know their digests), asks the registry which it lacks, reads the state and\n" +
			"the cluster, and prints per node the images to push and each object to create, update, replace or\n" +
			"delete, destructive ones marked. It writes nothing to the registry, the cluster or the state, but\n" +
			"with -out, once, the group's secret key when the state has none (the saved plan's hashes need it).\n" +
			"With -destroy it shows what `slipway destroy` would remove instead, and builds no image.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if destroy && out != "" {
				return errors.New("plan: -destroy cannot be saved with -out: apply does not run a destroy plan; run `slipway destroy`")
			}
			if f, err := loadWaves(g); err != nil || f != nil {
				if err == nil && out != "" {
					err = fmt.Errorf("plan: the plan of waves file %s cannot be saved with -out: apply it with `slipway apply -f %s`", g.File, g.File)
				}
				if err != nil {
					return err
				}
				return wavesPlan(cmd, g, f, destroy, detailed)
			}
			return inSession(cmd, g, !destroy, func(ctx context.Context, s *session) error {
				var p *plan.Plan
				var err error
				if destroy {
					p, err = s.engine.PlanDestroy(ctx, s.target)
				} else if err = recordKeyForSaved(ctx, g, s, out); err != nil {
					return err
				} else {
					p, err = s.engine.Plan(ctx, s.target)
				}
				s.printer.Close()
				if err != nil {
					return err
				}
				p.Notes = append(p.Notes, moveNotes(p, s.group)...)
				if g.Output == "json" {
					err = ui.PlanJSON(cmd.OutOrStdout(), p)
				} else {
					ui.PlanNotes(cmd.ErrOrStderr(), p)
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
			})
		},
	}
	cmd.Flags().BoolVar(&detailed, "detailed-exitcode", false, "exit 0 with no changes, 1 on error, 2 with changes (also -detailed-exitcode)")
	cmd.Flags().BoolVar(&destroy, "destroy", false, "show what destroy would remove, claims marked destructive; change nothing (also -destroy)")
	cmd.Flags().StringVar(&out, "out", "", "save the plan to `FILE`, for slipway apply FILE (also -out FILE)")
	addTargetFlag(cmd.Flags(), g)
	addKeepClaimsFlag(cmd.Flags(), g)
	addMoveFlag(cmd.Flags(), g)
	return cmd
}

// singleDashFlags are the long flags OpenTofu users type with one dash (SPEC §2: `plan -out
// FILE`, `plan -destroy`). pflag reads a single dash as shorthands: `-out` would be `-o ut`,
// `-destroy` an unknown `-d`.
var singleDashFlags = []string{"out", "destroy", "detailed-exitcode"}

// NormalizeArgs turns `-out`, `-destroy` and `-detailed-exitcode` (with or without `=VALUE`)
// into their double-dash form; everything after `--` is left alone.
func NormalizeArgs(args []string) []string {
	out := make([]string, len(args))
	copy(out, args)
	for i, a := range out {
		if a == "--" {
			break
		}
		for _, f := range singleDashFlags {
			if a == "-"+f || strings.HasPrefix(a, "-"+f+"=") {
				out[i] = "-" + a
			}
		}
	}
	return out
}

// recordKeyForSaved records the group's secret key, under the lock, before a plan saved to
// out is made when the state has none: the saved plan's hashes of secret values are keyed
// with it, and the apply of that plan must find it (issue 35 item 5).
func recordKeyForSaved(ctx context.Context, g *Globals, s *session, out string) error {
	if out == "" || !s.target.Group.HasOwnSecrets() {
		return nil
	}
	doc, err := s.backend.Read(ctx)
	if err != nil || engine.SecretKeyRecorded(s.target.Group, doc) {
		return err
	}
	return withLock(ctx, g, s.backend, "plan -out", 0, func(ctx context.Context) error {
		_, err := s.engine.RecordSecretKey(ctx, s.target)
		return err
	})
}
