package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"slipway.dev/slipway/internal/engine"
	"slipway.dev/slipway/internal/image"
	"slipway.dev/slipway/internal/kube"
	"slipway.dev/slipway/internal/render"
	"slipway.dev/slipway/internal/spec"
	"slipway.dev/slipway/internal/ui"
)

func init() { register(newRenderCmd) }

type renderOptions struct {
	out         string
	push        bool
	stopSignal  bool
	monitors    bool
	lockTimeout time.Duration
}

// newRenderCmd is `slipway render`: the objects of the group as YAML, or a kustomize package
// with --out (SPEC §9). It writes nothing to the cluster.
func newRenderCmd(g *Globals) *cobra.Command {
	var o renderOptions
	cmd := &cobra.Command{
		Use:   "render",
		Short: "Print the group's Kubernetes objects as YAML, or write a kustomize package with --out",
		Long: "Renders every object slipway applies for the group, each image pinned by the digest the\n" +
			"registry holds for its content tag. With --push, images the registry lacks are built and\n" +
			"pushed first. Machine IDs come from the group's state; a node the state does not know gets\n" +
			"one (the one its running Deployment has, else a new random one), recorded in the state under\n" +
			"the group's lock so that the next render is byte-identical and apply uses it; so is the group's\n" +
			"secret key, which the hashes of secret values are keyed with, when the state has none. Nothing\n" +
			"is written to the cluster.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runRender(cmd.Context(), g, o, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.out, "out", "", "write a kustomize package into this directory instead of YAML on stdout")
	f.BoolVar(&o.push, "push", false, "build and push the images the registry lacks first")
	addLockTimeoutFlag(f, &o.lockTimeout)
	f.BoolVar(&o.stopSignal, "stop-signal", false, "give systemd containers the stop signal SIGRTMIN+3 (needs the cluster's ContainerStopSignals feature)")
	f.BoolVar(&o.monitors, "service-monitors", false, "make the ServiceMonitors that roles ask for with serviceMonitor (needs the Prometheus Operator's CRD in the cluster)")
	return cmd
}

func runRender(ctx context.Context, g *Globals, o renderOptions, stdout, stderr io.Writer) error {
	r, err := openRegistryGroup(ctx, g)
	if err != nil {
		return err
	}
	grp, ns := r.grp, r.ns
	// stdout carries the objects: progress and warnings go to stderr whatever the output.
	printer := ui.NewPlain(stderr)
	if g.Output == "json" {
		printer = ui.NewJSON(stderr)
	}
	defer printer.Close()
	// The images resolve as a plan's do (engine.Images), so apply pins what render printed.
	e := engine.New(engine.Options{Builder: image.NewBuilder(r.opts), Publisher: r.pub, Registry: r.opts.Registry,
		Parallelism: g.Parallelism, Emit: printer.Event})
	images, err := e.Images(ctx, engine.Target{Group: grp, Namespace: ns, Jobs: r.jobs(ctx, stderr)}, o.push)
	if err != nil {
		return err
	}
	ids, key, err := renderStateInputs(ctx, g, grp, ns, o.lockTimeout, stderr)
	if err != nil {
		return err
	}
	objs, err := render.Objects(render.Input{Group: grp, Namespace: ns, Images: images, MachineIDs: ids, SecretKey: key,
		StopSignal: o.stopSignal, ServiceMonitors: o.monitors})
	if err != nil {
		return err
	}
	if o.out != "" {
		if err := render.WritePackage(o.out, objs); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "render: wrote %s and kustomization.yaml to %s\n", ui.Plural(len(objs), "object"), o.out)
		return nil
	}
	data, err := render.YAML(objs)
	if err != nil {
		return err
	}
	_, err = stdout.Write(data)
	return err
}

// renderMachineIDs returns the machine ID of every node from the group's state. Nodes the
// state does not know get theirs made and recorded in the state under the group's lock, so
// that the next render is byte-identical (SPEC §9) and apply deploys the same IDs. A render
// whose state knows every node reads the state only: no lock, no write, no cluster.
// renderStateInputs returns what render takes from the state: the machine IDs and the secret
// key; those the state lacks are made and recorded under the group's lock.
func renderStateInputs(ctx context.Context, g *Globals, grp *spec.Group, ns string, lockTimeout time.Duration, stderr io.Writer) (map[string]string, []byte, error) {
	backend, err := openState(ctx, g, grp.Name, stderr)
	if err != nil {
		return nil, nil, err
	}
	doc, err := backend.Read(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("render: read state %s: %w", backend.Location(), err)
	}
	ids, fresh := engine.MachineIDs(grp, doc, nil, ns)
	keyed := engine.SecretKeyRecorded(grp, doc)
	if len(fresh) == 0 && keyed {
		key, err := engine.New(engine.Options{}).RecordSecretKey(ctx, engine.Target{Group: grp, Namespace: ns, Store: backend})
		return ids, key, err
	}
	// A node that runs already keeps its ID: the engine reads the live Deployments when a
	// cluster is configured. Without one (a render for GitOps), the IDs are new.
	o := engine.Options{}
	if len(fresh) > 0 {
		if c, err := kube.Open(g.KubeconfigSource(), g.Context); err == nil {
			o.Kube = c
		} else {
			fmt.Fprintf(stderr, "warning: render: no cluster to read running machine IDs from (%v); new nodes get new ones\n", err)
		}
	}
	var recorded []string
	var key []byte
	legacy, err := openLegacyState(ctx, g, grp, stderr)
	if err != nil {
		return nil, nil, err
	}
	err = withLock(ctx, g, backend, "render", lockTimeout, func(ctx context.Context) error {
		t := engine.Target{Group: grp, Namespace: ns, Store: backend, Legacy: legacy}
		var err error
		if len(fresh) > 0 {
			// A state of an earlier release holds the machine IDs: adopted, not made anew.
			if err := engine.New(o).Adopt(ctx, t); err != nil {
				return err
			}
			if ids, recorded, err = engine.New(o).RecordMachineIDs(ctx, t); err != nil {
				return err
			}
		}
		key, err = engine.New(o).RecordSecretKey(ctx, t)
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	if len(recorded) > 0 {
		fmt.Fprintf(stderr, "render: recorded the machine IDs of %s in the state %s; later renders and apply use them\n",
			strings.Join(recorded, ", "), backend.Location())
	}
	if !keyed {
		fmt.Fprintf(stderr, "render: recorded the group's secret key in the state %s: the hashes of secret values are keyed with it\n", backend.Location())
	}
	return ids, key, nil
}
