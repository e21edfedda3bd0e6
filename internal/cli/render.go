package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/spf13/cobra"
	"golang.org/x/sync/errgroup"

	"slipway.dev/slipway/internal/engine"
	"slipway.dev/slipway/internal/image"
	"slipway.dev/slipway/internal/kube"
	"slipway.dev/slipway/internal/render"
	"slipway.dev/slipway/internal/spec"
)

func init() { register(newRenderCmd) }

type renderOptions struct {
	out         string
	push        bool
	stopSignal  bool
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
			"the group's lock so that the next render is byte-identical and apply uses it. Nothing is\n" +
			"written to the cluster.",
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
	return cmd
}

func runRender(ctx context.Context, g *Globals, o renderOptions, stdout, stderr io.Writer) error {
	opts := g.imageOptions()
	if opts.Registry == "" {
		return image.ErrNoRegistry
	}
	grp, ns, err := loadGroup(g)
	if err != nil {
		return err
	}
	jobs := imageJobs(grp, opts.Registry, ns)
	pub, err := image.NewPublisher(opts)
	if err != nil {
		return err
	}
	builder := image.NewBuilder(opts)
	var images map[string]string
	if o.push {
		p := &pushPrinter{w: stderr, json: g.Output == "json"}
		results, err := image.PushAll(ctx, builder, pub, jobs, g.Parallelism, p.event)
		if err != nil {
			return err
		}
		images = make(map[string]string, len(results))
		for _, r := range results {
			images[r.Name] = r.Digest.String()
		}
	} else {
		images, err = resolveDigests(ctx, builder, pub, jobs, g.Parallelism, stderr)
		if err != nil {
			return err
		}
	}
	ids, err := renderMachineIDs(ctx, g, grp, ns, o.lockTimeout, stderr)
	if err != nil {
		return err
	}
	objs, err := render.Objects(render.Input{Group: grp, Namespace: ns, Images: images, MachineIDs: ids, StopSignal: o.stopSignal})
	if err != nil {
		return err
	}
	if o.out != "" {
		if err := render.WritePackage(o.out, objs); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "render: wrote %s and kustomization.yaml to %s\n", plural(len(objs), "object"), o.out)
		return nil
	}
	data, err := render.YAML(objs)
	if err != nil {
		return err
	}
	_, err = stdout.Write(data)
	return err
}

// imageLookup is what render needs of a registry: the digest of a tag, if it is there.
// image.Publisher has it (a HEAD request).
type imageLookup interface {
	Lookup(ctx context.Context, ref string) (v1.Hash, bool, error)
}

// imageTagger builds an image in memory to learn its content tag; image.Builder has it.
type imageTagger interface {
	Build(ctx context.Context, src image.Source) (v1.Image, []string, error)
	Tag(img v1.Image) (string, error)
}

// resolveDigests returns, per job name, `<repository>@sha256:…` of the job's content tag as the
// registry holds it. An image the registry lacks is an error naming the node (or role) and
// the reference, and every such image is listed, not only the first.
func resolveDigests(ctx context.Context, b imageTagger, reg imageLookup, jobs []image.Job, parallelism int, stderr io.Writer) (map[string]string, error) {
	digests := make([]string, len(jobs))
	missing := make([]error, len(jobs))
	eg, ctx := errgroup.WithContext(ctx)
	eg.SetLimit(max(parallelism, 1))
	for i, job := range jobs {
		eg.Go(func() error {
			_, ref, warnings, err := image.BuildTagged(ctx, b, job)
			for _, w := range warnings {
				fmt.Fprintf(stderr, "warning: image %s: %s\n", job.Name, w)
			}
			if err != nil {
				return err
			}
			h, found, err := reg.Lookup(ctx, ref)
			if err != nil {
				return fmt.Errorf("image %s: %w", job.Name, err)
			}
			if !found {
				missing[i] = fmt.Errorf("image %s: %s is not in the registry: push it (render --push, or slipway images push)", job.Name, ref)
				return nil
			}
			digests[i] = job.Repository + "@" + h.String()
			return nil
		})
	}
	if err := eg.Wait(); err != nil {
		return nil, err
	}
	if err := errors.Join(missing...); err != nil {
		return nil, err
	}
	out := make(map[string]string, len(jobs))
	for i, job := range jobs {
		out[job.Name] = digests[i]
	}
	return out, nil
}

// renderMachineIDs returns the machine ID of every node from the group's state. Nodes the
// state does not know get theirs made and recorded in the state under the group's lock, so
// that the next render is byte-identical (SPEC §9) and apply deploys the same IDs. A render
// whose state knows every node reads the state only: no lock, no write, no cluster.
func renderMachineIDs(ctx context.Context, g *Globals, grp *spec.Group, ns string, lockTimeout time.Duration, stderr io.Writer) (map[string]string, error) {
	backend, err := openState(ctx, g, grp.Name, stderr)
	if err != nil {
		return nil, err
	}
	doc, err := backend.Read(ctx)
	if err != nil {
		return nil, fmt.Errorf("render: read state %s: %w", backend.Location(), err)
	}
	ids, fresh := engine.MachineIDs(grp, doc, nil, ns)
	if len(fresh) == 0 {
		return ids, nil
	}
	// A node that runs already keeps its ID: the engine reads the live Deployments when a
	// cluster is configured. Without one (a render for GitOps), the IDs are new.
	o := engine.Options{}
	if c, err := kube.Open(g.KubeconfigSource(), g.Context); err == nil {
		o.Kube = c
	} else {
		fmt.Fprintf(stderr, "warning: render: no cluster to read running machine IDs from (%v); new nodes get new ones\n", err)
	}
	var recorded []string
	err = withLock(ctx, g, backend, "render", lockTimeout, func(ctx context.Context) error {
		var err error
		ids, recorded, err = engine.New(o).RecordMachineIDs(ctx, engine.Target{Group: grp, Namespace: ns, Store: backend})
		return err
	})
	if err != nil {
		return nil, err
	}
	if len(recorded) > 0 {
		fmt.Fprintf(stderr, "render: recorded the machine IDs of %s in the state %s; later renders and apply use them\n",
			strings.Join(recorded, ", "), backend.Location())
	}
	return ids, nil
}
