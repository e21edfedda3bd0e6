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

	"slipway.dev/slipway/internal/image"
	"slipway.dev/slipway/internal/kube"
	"slipway.dev/slipway/internal/render"
	"slipway.dev/slipway/internal/spec"
	"slipway.dev/slipway/internal/state"
)

func init() { register(newRenderCmd) }

type renderOptions struct {
	out        string
	push       bool
	stopSignal bool
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
			"pushed first. Machine IDs come from the group's state; a node the state does not know\n" +
			"gets a new random one (a warning says so). Nothing is written to the cluster or the state.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runRender(cmd.Context(), g, o, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.out, "out", "", "write a kustomize package into this directory instead of YAML on stdout")
	f.BoolVar(&o.push, "push", false, "build and push the images the registry lacks first")
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
		p := &pushPrinter{w: stderr, json: g.Output == "json", last: map[string]time.Time{}}
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
	ids, err := stateMachineIDs(ctx, g, grp, stderr)
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

// stateMachineIDs returns the machine ID of every node and role (keys as render.Input wants),
// from the group's state. A node or role the state does not know yet gets a new random ID and
// a warning: apply will make and record its own, so that rendering is not repeatable.
func stateMachineIDs(ctx context.Context, g *Globals, grp *spec.Group, stderr io.Writer) (map[string]string, error) {
	url := g.StateURL(grp.Name)
	var kc state.KubeAccess
	if strings.HasPrefix(url, "kubernetes://") || strings.HasPrefix(url, "k8s://") {
		c, err := kube.Open(g.KubeconfigSource(), g.Context)
		if err != nil {
			return nil, err
		}
		kc = c
	}
	backend, err := state.Open(ctx, url, grp.Name, kc)
	if err != nil {
		return nil, err
	}
	doc, err := backend.Read(ctx)
	if err != nil {
		return nil, fmt.Errorf("render: read state %s: %w", backend.Location(), err)
	}
	return machineIDs(grp, doc, backend.Location(), stderr), nil
}

func machineIDs(grp *spec.Group, doc *state.Document, where string, stderr io.Writer) map[string]string {
	ids := map[string]string{}
	var fresh []string
	for _, n := range grp.Nodes {
		var ns *state.NodeState
		if doc != nil {
			ns = doc.Nodes[n.Name]
		}
		if ns != nil && ns.MachineID != "" {
			ids[n.Name] = ns.MachineID
		} else {
			ids[n.Name] = state.NewUUID()
			fresh = append(fresh, n.Name)
		}
		for _, r := range n.Roles {
			key := spec.RoleMachineIDKey(n.Name, r.Name)
			if ns != nil && ns.Roles[r.Name] != nil && ns.Roles[r.Name].MachineID != "" {
				ids[key] = ns.Roles[r.Name].MachineID
			} else {
				ids[key] = state.NewUUID()
				fresh = append(fresh, key)
			}
		}
	}
	if len(fresh) > 0 {
		fmt.Fprintf(stderr, "warning: render: the state %s has no machine ID for %s; using new random ones, which apply will not reuse\n",
			where, strings.Join(fresh, ", "))
	}
	return ids
}
