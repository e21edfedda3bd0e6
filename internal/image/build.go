package image

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/partial"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"slipway.dev/slipway/internal/realpath"
)

// LocalBuilder builds images on this machine. Base images are read from their registry with
// the same credentials and transport rules as pushes.
type LocalBuilder struct {
	opts  Options
	trees *treeIndex // nil without Options.TreeIndex

	// links resolves the rootfs paths of a pass (the builds up to SaveIndex), each directory
	// they share once; a new pass starts with none, so a link made since is seen.
	linksMu sync.Mutex
	links   *realpath.Cache

	remoteOnce sync.Once
	remote     *registryClient
	remoteErr  error
}

var _ Builder = (*LocalBuilder)(nil)

// NewBuilder returns a builder; opts matter only for base images.
func NewBuilder(opts Options) *LocalBuilder {
	return &LocalBuilder{opts: opts, trees: newTreeIndex(opts.TreeIndex)}
}

// SaveIndex writes the index of rootfs trees (Options.TreeIndex) when a build changed it.
// It ends a pass: the next build resolves its paths anew.
func (b *LocalBuilder) SaveIndex() error {
	b.linksMu.Lock()
	b.links = nil
	b.linksMu.Unlock()
	return b.trees.save()
}

// resolver is the pass's cache of resolved paths.
func (b *LocalBuilder) resolver() *realpath.Cache {
	b.linksMu.Lock()
	defer b.linksMu.Unlock()
	if b.links == nil {
		b.links = &realpath.Cache{}
	}
	return b.links
}

// Tag returns TagFor(img).
func (b *LocalBuilder) Tag(img v1.Image) (string, error) { return TagFor(img) }

// Build returns the image of src. For a rootfs or added files it reads the files once to learn
// their digest; compressing them waits until a push or a layout write needs the layer.
func (b *LocalBuilder) Build(ctx context.Context, src Source) (v1.Image, []string, error) {
	epoch, err := sourceDateEpoch()
	if err != nil {
		return nil, nil, err
	}
	n := 0
	for _, s := range []string{src.Rootfs, src.Archive, src.Base} {
		if s != "" {
			n++
		}
	}
	if src.Binaries != nil {
		if n != 0 {
			return nil, nil, fmt.Errorf("image source: binaries with rootfs, archive or base")
		}
		img, err := buildBinaries(src.Binaries, epoch)
		return img, nil, err
	}
	if n != 1 {
		return nil, nil, fmt.Errorf("image source: exactly one of rootfs, archive and base must be set, not %d", n)
	}
	if len(src.Add) > 0 && src.Base == "" {
		return nil, nil, fmt.Errorf("image source: add needs a base")
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	switch {
	case src.Rootfs != "":
		return buildRootfs(ctx, src, epoch, b.trees, b.resolver())
	case src.Archive != "":
		img, err := loadArchive(archiveFile{src.Context, src.Archive})
		if err != nil {
			return nil, nil, err
		}
		img, err = withConfig(img, src, fmt.Sprintf("archive %s", src.Archive))
		return img, nil, err
	default:
		return b.buildBase(ctx, src, epoch)
	}
}

// sourceDateEpoch is the fixed time of every tar entry: SOURCE_DATE_EPOCH when set, the
// convention of reproducible builds, else the Unix epoch.
func sourceDateEpoch() (time.Time, error) {
	v := os.Getenv("SOURCE_DATE_EPOCH")
	if v == "" {
		return time.Unix(0, 0).UTC(), nil
	}
	s, err := strconv.ParseInt(v, 10, 64)
	if err != nil || s < 0 {
		return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH %q: not a number of seconds", v)
	}
	return time.Unix(s, 0).UTC(), nil
}

// imageConfig is the config written for a rootfs image. It has its own type, not
// v1.ConfigFile, so that no creation time appears in it: v1.ConfigFile always writes one.
type imageConfig struct {
	Architecture string          `json:"architecture"`
	OS           string          `json:"os"`
	Config       containerConfig `json:"config"`
	RootFS       rootFS          `json:"rootfs"`
	History      []history       `json:"history"`
}

type containerConfig struct {
	User       string            `json:"User,omitempty"`
	Entrypoint []string          `json:"Entrypoint,omitempty"`
	Labels     map[string]string `json:"Labels,omitempty"`
	StopSignal string            `json:"StopSignal,omitempty"`
}

type rootFS struct {
	Type    string    `json:"type"`
	DiffIDs []v1.Hash `json:"diff_ids"`
}

type history struct {
	CreatedBy string `json:"created_by"`
}

func buildRootfs(ctx context.Context, src Source, epoch time.Time, trees *treeIndex, links *realpath.Cache) (v1.Image, []string, error) {
	fi, err := os.Stat(src.Rootfs)
	if err != nil {
		return nil, nil, fmt.Errorf("rootfs %s: %w", src.Rootfs, err)
	}
	if !fi.IsDir() {
		return nil, nil, fmt.Errorf("rootfs %s: not a directory", src.Rootfs)
	}
	// A rootfs given through a symlink is walked at its target: the walk does not follow links.
	abs, err := filepath.Abs(src.Rootfs)
	if err != nil {
		return nil, nil, fmt.Errorf("rootfs %s: %w", src.Rootfs, err)
	}
	root, err := links.Eval(abs)
	if err != nil {
		return nil, nil, fmt.Errorf("rootfs %s: %w", src.Rootfs, err)
	}
	open := openDir(root)
	if src.Context != "" {
		// Through the context, by the path the group file wrote: a link that leads out of it,
		// made since the file was loaded, fails the pass that meets it.
		open = func() (*os.Root, error) { return openTreeIn(src.Context, src.Rootfs) }
	}
	layer, warnings, err := trees.rootfsLayer(ctx, "rootfs "+src.Rootfs, root, open, epoch)
	if err != nil {
		return nil, warnings, err
	}
	cmd := src.Command
	if len(cmd) == 0 {
		cmd = DefaultCommand
	}
	cfg := imageConfig{
		Architecture: "amd64",
		OS:           "linux",
		Config:       containerConfig{User: src.User, Entrypoint: cmd, Labels: src.Labels, StopSignal: src.StopSignal},
		RootFS:       rootFS{Type: "layers", DiffIDs: []v1.Hash{layer.diffID}},
		History:      []history{{CreatedBy: "slipway: rootfs"}},
	}
	raw, err := json.Marshal(cfg)
	if err != nil {
		return nil, warnings, fmt.Errorf("rootfs %s: config: %w", src.Rootfs, err)
	}
	img, err := partial.CompressedToImage(&oneLayerImage{config: raw, layer: layer})
	if err != nil {
		return nil, warnings, fmt.Errorf("rootfs %s: %w", src.Rootfs, err)
	}
	return img, warnings, nil
}

// oneLayerImage is the core of a rootfs image; its manifest is made on first use because it
// needs the compressed layer's digest.
type oneLayerImage struct {
	config []byte
	layer  *lazyLayer

	once     sync.Once
	manifest []byte
	err      error
}

func (i *oneLayerImage) RawConfigFile() ([]byte, error)      { return i.config, nil }
func (i *oneLayerImage) MediaType() (types.MediaType, error) { return types.OCIManifestSchema1, nil }

func (i *oneLayerImage) RawManifest() ([]byte, error) {
	i.once.Do(func() {
		digest, err := i.layer.Digest()
		if err != nil {
			i.err = err
			return
		}
		size, _ := i.layer.Size()
		cfgHash, cfgSize, err := v1.SHA256(bytes.NewReader(i.config))
		if err != nil {
			i.err = err
			return
		}
		m := v1.Manifest{
			SchemaVersion: 2,
			MediaType:     types.OCIManifestSchema1,
			Config:        v1.Descriptor{MediaType: types.OCIConfigJSON, Size: cfgSize, Digest: cfgHash},
			Layers:        []v1.Descriptor{{MediaType: types.OCILayer, Size: size, Digest: digest}},
		}
		i.manifest, i.err = json.Marshal(m)
	})
	return i.manifest, i.err
}

func (i *oneLayerImage) LayerByDigest(h v1.Hash) (partial.CompressedLayer, error) {
	if d, err := i.layer.Digest(); err == nil && d == h {
		return i.layer, nil
	}
	return nil, fmt.Errorf("layer %s: not in the image", h)
}

// buildBase pulls the base image's manifest and config (its layers stay in the registry until
// a push copies or mounts them) and adds one reproducible layer with the added files.
func (b *LocalBuilder) buildBase(ctx context.Context, src Source, epoch time.Time) (v1.Image, []string, error) {
	what := "base " + src.Base
	rc, err := b.registry()
	if err != nil {
		return nil, nil, err
	}
	ref, err := rc.parse(src.Base)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", what, err)
	}
	img, err := remote.Image(ref, remote.WithContext(ctx), remote.Reuse(rc.puller), remote.WithPlatform(v1.Platform{OS: "linux", Architecture: "amd64"}))
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", what, rc.explain(err))
	}
	var warnings []string
	if len(src.Add) > 0 {
		layer, w, err := newLazyLayer(ctx, "add to "+src.Base, addTar(src.Add, src.Context, epoch))
		warnings = w
		if err != nil {
			return nil, warnings, err
		}
		img, err = mutate.Append(img, mutate.Addendum{
			Layer:     layer,
			MediaType: types.OCILayer,
			History:   v1.History{CreatedBy: "slipway: add", Created: v1.Time{Time: epoch}},
		})
		if err != nil {
			return nil, warnings, fmt.Errorf("%s: %w", what, err)
		}
	}
	img, err = withConfig(img, src, what)
	return img, warnings, err
}

// withConfig sets the command, labels, stop signal and user of src on img, leaving img untouched (and
// its digest the same) when it already has them.
func withConfig(img v1.Image, src Source, what string) (v1.Image, error) {
	if len(src.Command) == 0 && len(src.Labels) == 0 && src.StopSignal == "" && src.User == "" {
		return img, nil
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("%s: config: %w", what, err)
	}
	cf = cf.DeepCopy()
	changed := false
	if len(src.Command) > 0 && (!slices.Equal(cf.Config.Entrypoint, src.Command) || len(cf.Config.Cmd) > 0) {
		cf.Config.Entrypoint, cf.Config.Cmd = slices.Clone(src.Command), nil
		changed = true
	}
	if src.StopSignal != "" && cf.Config.StopSignal != src.StopSignal {
		cf.Config.StopSignal = src.StopSignal
		changed = true
	}
	if src.User != "" && cf.Config.User != src.User {
		cf.Config.User = src.User
		changed = true
	}
	for k, v := range src.Labels {
		if cur, ok := cf.Config.Labels[k]; !ok || cur != v {
			if cf.Config.Labels == nil {
				cf.Config.Labels = map[string]string{}
			}
			maps.Copy(cf.Config.Labels, map[string]string{k: v})
			changed = true
		}
	}
	if !changed {
		return img, nil
	}
	out, err := mutate.ConfigFile(img, cf)
	if err != nil {
		return nil, fmt.Errorf("%s: config: %w", what, err)
	}
	return out, nil
}

func (b *LocalBuilder) registry() (*registryClient, error) {
	b.remoteOnce.Do(func() { b.remote, b.remoteErr = newRegistryClient(b.opts) })
	return b.remote, b.remoteErr
}
