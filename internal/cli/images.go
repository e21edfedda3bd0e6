package cli

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"slipway.dev/slipway/internal/image"
	"slipway.dev/slipway/internal/secretsbin"
	"slipway.dev/slipway/internal/secretsconf"
	"slipway.dev/slipway/internal/spec"
	"slipway.dev/slipway/internal/ui"
)

func init() { register(newImagesCmd) }

func newImagesCmd(g *Globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "images",
		Short: "Build the images of the group, or push them to the registry",
	}
	var out string
	build := &cobra.Command{
		Use:   "build",
		Short: "Build every image of the group into an OCI layout directory, without pushing",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return imagesBuild(cmd.Context(), g, out, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	build.Flags().StringVar(&out, "out", "", "directory of the OCI image layout to write (required)")
	_ = build.MarkFlagRequired("out")
	push := &cobra.Command{
		Use:   "push",
		Short: "Push every image of the group whose tag the registry lacks; print each reference with its digest",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return imagesPush(cmd.Context(), g, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	cmd.AddCommand(build, push)
	return cmd
}

func (g *Globals) imageOptions() image.Options {
	return image.Options{Registry: g.RegistryHost(), Insecure: g.InsecureRegistry,
		AuthFile: g.RegistryAuthFile(), AuthFileSetting: g.registryAuthSetting()}
}

// treeIndexPath is where plan and apply remember the rootfs trees of the group file: one
// file per group file in the user's cache, "" (no index) when there is no cache directory.
func (g *Globals) treeIndexPath() string {
	cache, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	abs, err := filepath.Abs(g.File)
	if err != nil {
		return ""
	}
	sum := sha256.Sum256([]byte(abs))
	return filepath.Join(cache, "slipway", "rootfs-index", hex.EncodeToString(sum[:12])+".json")
}

// imageJobs lists the images of a group: each node's, then each service role's as
// `<node>-<role>`. registry may be empty (images build without --registry): the repositories
// are then `<namespace>/<name>`. A role with sidecar secrets needs the sidecar's programs:
// a slipway without them built in builds them the first time (secretsbin), saying so on
// progress.
func imageJobs(ctx context.Context, grp *spec.Group, registry, namespace string, progress io.Writer) []image.Job {
	repo := func(name string) string {
		if registry == "" {
			return namespace + "/" + name
		}
		return image.Repository(registry, namespace, name)
	}
	job := func(name string, img spec.Image, served *[]spec.Port, init string) image.Job {
		src := imageSource(img, registry, served, init)
		src.Context = grp.Dir // the group file's paths stay in its directory while they are read
		return image.Job{Name: name, Repository: repo(name), Source: src}
	}
	var jobs []image.Job
	for _, n := range grp.Nodes {
		jobs = append(jobs, job(n.Name, n.Image, &n.Firewall.Served, n.Init))
		for _, r := range n.Roles {
			if r.Service != nil {
				jobs = append(jobs, job(n.Name+"-"+r.Name, r.Service.Image, nil, ""))
			}
			if len(r.SidecarSecrets) > 0 {
				name := spec.SecretsImageName(n.Name, r.Name)
				jobs = append(jobs, image.Job{Name: name, Repository: repo(name), Source: secretsSource(ctx, progress)})
			}
		}
	}
	return jobs
}

// secretsSource is the secrets sidecar's image (FR-004e): slipway's own program for every
// platform, embedded in this binary or built from its source.
func secretsSource(ctx context.Context, progress io.Writer) image.Source {
	progs, err := secretsbin.Programs(ctx, progress)
	return image.Source{Binaries: &image.Binaries{Path: secretsconf.Binary, ByPlatform: progs, Missing: err,
		Command: []string{secretsconf.Binary, "run"}}}
}

// imageSource maps a group-file image to a build source. The served-ports label goes on images
// slipway builds (rootfs, base+add); an archive is pushed as it is, so its digest stays the one
// its author made and signed, and a service image serves the role's ports, not the node's.
// served is nil for a service image. A base in slipway's registry (spec.RegistryPrefix) is
// named with registry. The image of an `init: systemd` node that slipway builds stops with
// SIGRTMIN+3 (systemdStopSignal); init is "" for a service image.
func imageSource(img spec.Image, registry string, served *[]spec.Port, init string) image.Source {
	src := image.Source{Rootfs: img.Rootfs, Archive: img.Archive, Base: img.BaseIn(registry), Command: img.Command, User: img.User}
	for _, a := range img.Add {
		src.Add = append(src.Add, image.AddFile{Src: a.Src, Dst: a.Dst})
	}
	if img.Archive == "" && served != nil {
		src.Labels = map[string]string{image.ServedLabel: servedLabel(*served)}
	}
	if img.Archive == "" && init == spec.InitSystemd {
		src.StopSignal = systemdStopSignal
	}
	return src
}

// systemdStopSignal is the image config's stop signal of `init: systemd` nodes: systemd as
// PID 1 shuts down on SIGRTMIN+3 and re-executes itself on SIGTERM, the runtime's default. The
// runtime (containerd's and CRI-O's CRI) sends the image's stop signal when the pod gives
// none, which is every cluster without the ContainerStopSignals feature (docs/objects.md).
const systemdStopSignal = "SIGRTMIN+3"

// servedLabel writes ports as `tcp/22,tcp/80,udp/53`.
func servedLabel(ports []spec.Port) string {
	items := make([]string, len(ports))
	for i, p := range ports {
		items[i] = strings.ToLower(p.Protocol) + "/" + fmt.Sprint(p.Number)
	}
	return strings.Join(items, ",")
}

func loadGroup(g *Globals) (*spec.Group, string, error) {
	grp, err := spec.Load(g.File)
	if err != nil {
		return nil, "", err
	}
	if err := g.checkRegistry(); err != nil {
		return nil, "", err
	}
	return g.targetOf(grp)
}

func imagesBuild(ctx context.Context, g *Globals, out string, stdout, stderr io.Writer) error {
	grp, ns, err := loadGroup(g)
	if err != nil {
		return err
	}
	opts := g.imageOptions()
	b := image.NewBuilder(opts)
	var imgs []image.LayoutImage
	for _, job := range imageJobs(ctx, grp, opts.Registry, ns, stderr) {
		img, ref, warnings, err := image.BuildTagged(ctx, b, job)
		for _, w := range warnings {
			fmt.Fprintf(stderr, "warning: image %s: %s\n", job.Name, w)
		}
		if err != nil {
			return err
		}
		imgs = append(imgs, image.LayoutImage{Ref: ref, Image: img})
	}
	if err := image.WriteLayout(out, imgs); err != nil {
		return err
	}
	for _, li := range imgs {
		d, err := li.Image.Digest()
		if err != nil {
			return fmt.Errorf("image %s: %w", li.Ref, err)
		}
		fmt.Fprintf(stdout, "%s@%s\n", li.Ref, d)
	}
	fmt.Fprintf(stderr, "images: wrote %d image(s) to %s\n", len(imgs), out)
	return nil
}

func imagesPush(ctx context.Context, g *Globals, stdout, stderr io.Writer) error {
	r, err := openRegistryGroup(ctx, g)
	if err != nil {
		return err
	}
	results, err := image.PushAll(ctx, image.NewBuilder(r.opts), r.pub, r.jobs(ctx, stderr), g.Parallelism,
		ui.ImageEvents(stderr, g.Output == "json"))
	if err != nil {
		return err
	}
	return printPushed(stdout, results, g.Output == "json")
}

func printPushed(stdout io.Writer, results []image.Result, asJSON bool) error {
	pushed := make([]ui.PushedImage, len(results))
	for i, r := range results {
		pushed[i] = ui.PushedImage{Name: r.Name, Tag: r.Tag, Digest: r.Digest.String(), Pushed: r.Pushed}
	}
	return ui.PrintPushed(stdout, pushed, asJSON)
}

// registryGroup is what the verbs that build and push without a cluster need (render, images
// push): the group, its namespace, the registry's options and a publisher.
type registryGroup struct {
	grp  *spec.Group
	ns   string
	opts image.Options
	pub  image.Publisher
}

func openRegistryGroup(ctx context.Context, g *Globals) (*registryGroup, error) {
	r := &registryGroup{opts: g.imageOptions()}
	if r.opts.Registry == "" {
		return nil, noRegistry(ctx)
	}
	var err error
	if r.grp, r.ns, err = loadGroup(g); err != nil {
		return nil, err
	}
	if r.pub, err = image.NewPublisher(r.opts); err != nil {
		return nil, err
	}
	return r, nil
}

func (r *registryGroup) jobs(ctx context.Context, progress io.Writer) []image.Job {
	return imageJobs(ctx, r.grp, r.opts.Registry, r.ns, progress)
}
