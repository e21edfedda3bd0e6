package cli

import (
	"context"
	"time"

	"github.com/spf13/cobra"

	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/ui"
)

func init() { register(newApplyCmd) }

func newApplyCmd(g *Globals) *cobra.Command {
	var yes bool
	var lockTimeout time.Duration
	cmd := &cobra.Command{
		Use:   "apply [PLAN_FILE]",
		Short: "Plan, then push, apply, wait for each rollout and roll back a failed one",
		Long: "apply plans (or takes a plan saved with `plan -out`), then per node pushes its images, applies its\n" +
			"policies, account, claim and Services, stops its roles, rolls its Deployment out and waits for it,\n" +
			"sets it back to the previous image when the new pod does not become ready, starts its roles again,\n" +
			"and removes what left the group. A saved plan is refused when the state or the cluster moved.",
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if f, err := loadWaves(g); err != nil || (f != nil && len(args) == 0) {
				if err != nil {
					return err
				}
				return wavesApply(cmd, g, f, yes, lockTimeout)
			}
			var saved *plan.Plan
			if len(args) == 1 {
				var err error
				if saved, err = plan.Read(args[0]); err != nil {
					return err
				}
				// A saved plan that moves the group was made with --move-namespace.
				g.MoveNamespace = g.MoveNamespace || saved.Move != nil
			}
			return inSession(cmd, g, true, func(ctx context.Context, s *session) error {
				return withLock(ctx, g, s.backend, "apply", lockTimeout, func(ctx context.Context) error {
					p := saved
					if p == nil {
						var err error
						if p, err = s.engine.PlanForApply(ctx, s.target); err != nil {
							return err
						}
						p.Notes = append(p.Notes, moveNotes(p, s.group)...)
					} else if err := s.engine.CheckSaved(ctx, p, s.target); err != nil {
						return err
					}
					if g.Output != "json" {
						ui.PlanNotes(cmd.ErrOrStderr(), p)
					}
					if p.HasChanges() && g.Output != "json" {
						s.printer.Close()
						ui.PlanWith(cmd.ErrOrStderr(), p, g.planOptions(cmd.ErrOrStderr()))
						s.printer = newPrinter(g, cmd.OutOrStdout(), cmd.ErrOrStderr())
						s.engine.SetEmit(s.printer.Event)
					}
					if p.HasChanges() {
						// Refuse before asking: there is nothing to confirm.
						if err := p.Blocked(); err != nil {
							return err
						}
						// Whatever the output format: JSON on stdout is no answer to the question.
						if saved == nil {
							if err := confirmApply(g, yes, p, cmd.InOrStdin(), cmd.ErrOrStderr()); err != nil {
								return err
							}
						}
					}
					err := s.engine.Apply(ctx, p, s.target)
					if err == nil && g.Output != "json" {
						s.printer.Close()
						s.printer = newPrinter(g, cmd.OutOrStdout(), cmd.ErrOrStderr())
						return ui.Applied(cmd.OutOrStdout(), p)
					}
					return err
				})
			})
		},
	}
	cmd.Flags().BoolVar(&yes, "yes", false, "apply without asking (required without a terminal)")
	addLockTimeoutFlag(cmd.Flags(), &lockTimeout)
	addTargetFlag(cmd.Flags(), g)
	addKeepClaimsFlag(cmd.Flags(), g)
	addMoveFlag(cmd.Flags(), g)
	return cmd
}
