package cli

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"slipway.dev/slipway/internal/devcluster"
)

func newDevCmd(_ *Globals) *cobra.Command {
	var dir string
	dev := &cobra.Command{
		Use:   "dev",
		Short: "A local Kubernetes cluster (kwok) and OCI registry for trying slipway out and for tests",
	}
	dev.PersistentFlags().StringVar(&dir, "dir", "", "data directory of the dev cluster (env SLIPWAY_DEV_DIR; default ~/.local/state/slipway/dev)")
	dev.AddCommand(newDevUpCmd(&dir), newDevDownCmd(&dir), newDevEnvCmd(&dir))
	return dev
}

// newDevUpCmd is dev up; *dir is dev's --dir, read when the command runs.
func newDevUpCmd(dir *string) *cobra.Command {
	var gates []string
	var core, publish, noRealNode, spire, secrets, central bool
	up := &cobra.Command{
		Use:   "up",
		Short: "Start the dev cluster (building its binaries once) and print the environment to export",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if core && publish {
				return errors.New("dev up: --core and --publish exclude each other")
			}
			// The publishing parts (MetalLB, Envoy Gateway) build for about 10 minutes the first
			// time and only groups with publish: use them: dev up starts them when asked.
			o := devcluster.Options{Dir: *dir, Progress: cmd.ErrOrStderr(), Core: !publish, NoRealNode: noRealNode, Spire: spire, Secrets: secrets, Central: central}
			if cmd.Flags().Changed("feature-gates") {
				o.FeatureGates = gates
			}
			env, running, err := devcluster.Up(cmd.Context(), o)
			if err != nil {
				return err
			}
			if running {
				fmt.Fprintf(cmd.ErrOrStderr(), "dev: a dev cluster is already running in %s\n", env.Dir)
			}
			fmt.Fprint(cmd.OutOrStdout(), env.Exports())
			return nil
		},
	}
	up.Flags().StringSliceVar(&gates, "feature-gates", nil,
		"kube-apiserver feature gates, Name=true|false, comma-separated (e.g. ContainerStopSignals=true); a cluster running with others is refused")
	up.Flags().BoolVar(&publish, "publish", false,
		"also the publishing parts (MetalLB, Envoy Gateway; built the first time), for groups with publish:; their ports are fixed, so one cluster per machine")
	up.Flags().BoolVar(&core, "core", false,
		"without the publishing parts: what dev up does unless --publish (kept for scripts)")
	up.Flags().BoolVar(&secrets, "secrets", false,
		"also the secrets server (Vault "+devcluster.VaultVersion+" in memory, KV v2 and kubernetes auth; built the first time), for the secrets sidecar; added to a running cluster")
	up.Flags().BoolVar(&central, "central", false,
		"also PostgreSQL (Debian's package; needs --secrets) and the secrets server's database engine for it, for groups with central:; added to a running cluster")
	up.Flags().BoolVar(&noRealNode, "no-real-node", false,
		"without the real kubelet node beside the kwok nodes (each cluster's own: a second cluster under --dir gets a bridge, pod range and kubelet ports of its own)")
	up.Flags().BoolVar(&spire, "spire", false,
		"also a SPIRE server, its node's sshd and the spire-agent image (built the first time), for groups with spire:")
	return up
}

// newDevDownCmd is dev down; *dir is dev's --dir.
func newDevDownCmd(dir *string) *cobra.Command {
	return &cobra.Command{
		Use:   "down",
		Short: "Stop the dev cluster and remove its data",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			err := devcluster.Down(*dir)
			if errors.Is(err, devcluster.ErrNotRunning) {
				fmt.Fprintln(cmd.ErrOrStderr(), "dev: no dev cluster is running; nothing to stop")
				return nil
			}
			if err == nil {
				fmt.Fprintln(cmd.ErrOrStderr(), "dev: stopped")
			}
			return err
		},
	}
}

// newDevEnvCmd is dev env; *dir is dev's --dir.
func newDevEnvCmd(dir *string) *cobra.Command {
	return &cobra.Command{
		Use:   "env",
		Short: "Print the environment of the running dev cluster",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			d := *dir
			if d == "" {
				var err error
				if d, err = devcluster.DefaultDir(); err != nil {
					return err
				}
			}
			env, err := devcluster.Load(cmd.Context(), d)
			if err != nil {
				return fmt.Errorf("%w (start one with: slipway dev up)", err)
			}
			fmt.Fprint(cmd.OutOrStdout(), env.Exports())
			return nil
		},
	}
}
