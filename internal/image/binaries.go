package image

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Binaries is an image of one static program, built for several platforms: per platform an
// image of one layer holding only the program (no shell, no libraries), and an index over them,
// so that one digest names the program for every kube node's architecture. slipway's secrets
// sidecar is such an image.
type Binaries struct {
	Path       string            // absolute path of the program in the image, e.g. /slipway-secrets
	ByPlatform map[string][]byte // "linux/amd64" → the program
	Command    []string          // the image's entrypoint
	// Missing says why ByPlatform is empty (the programs were not built in): the build's error.
	Missing error
}

// binaryUID owns the program: the conventional "nonroot" user of distroless images.
const binaryUID = 65532

// buildBinaries is the index of b, reproducibly: sorted platforms, one tar entry with fixed
// owner, mode and time, and gzip at a fixed level, so the same programs give the same digest.
func buildBinaries(b *Binaries, epoch time.Time) (v1.Image, error) {
	if b.Missing != nil {
		return nil, b.Missing
	}
	if len(b.ByPlatform) == 0 {
		return nil, fmt.Errorf("image of %s: no platform", b.Path)
	}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	var first v1.Image
	for _, plat := range slices.Sorted(maps.Keys(b.ByPlatform)) {
		os, arch, ok := strings.Cut(plat, "/")
		if !ok {
			return nil, fmt.Errorf("image of %s: platform %q is not os/arch", b.Path, plat)
		}
		img, err := binaryImage(b, os, arch, b.ByPlatform[plat], epoch)
		if err != nil {
			return nil, fmt.Errorf("image of %s for %s: %w", b.Path, plat, err)
		}
		if first == nil {
			first = img
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img,
			Descriptor: v1.Descriptor{MediaType: types.OCIManifestSchema1, Platform: &v1.Platform{OS: os, Architecture: arch}}})
	}
	return &indexImage{Image: first, index: idx}, nil
}

func binaryImage(b *Binaries, os, arch string, prog []byte, epoch time.Time) (v1.Image, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	hdr := &tar.Header{Name: strings.TrimPrefix(b.Path, "/"), Mode: 0o555, Size: int64(len(prog)),
		Uid: binaryUID, Gid: binaryUID, ModTime: epoch, Typeflag: tar.TypeReg, Format: tar.FormatPAX}
	if err := tw.WriteHeader(hdr); err != nil {
		return nil, err
	}
	if _, err := tw.Write(prog); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	raw := buf.Bytes()
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(raw)), nil },
		tarball.WithCompressionLevel(gzip.BestCompression), tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err = mutate.Append(img, mutate.Addendum{Layer: layer, History: v1.History{CreatedBy: "slipway: " + b.Path, Created: v1.Time{Time: epoch}}})
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Created = os, arch, v1.Time{Time: epoch}
	cf.Config.Entrypoint = slices.Clone(b.Command)
	return mutate.ConfigFile(img, cf)
}

// indexImage carries an image index through the pipeline of single images (build, tag, plan,
// push): its digest and manifest are the index's, its content tag derives from the index
// digest, and a Publisher pushes the whole index. Its config and layers are those of the
// first platform's image, for the readers of labels.
type indexImage struct {
	v1.Image
	index v1.ImageIndex
}

func (i *indexImage) MediaType() (types.MediaType, error) { return i.index.MediaType() }
func (i *indexImage) Digest() (v1.Hash, error)            { return i.index.Digest() }
func (i *indexImage) RawManifest() ([]byte, error)        { return i.index.RawManifest() }
func (i *indexImage) Size() (int64, error)                { return i.index.Size() }

// ConfigName is the index digest: TagFor derives the tag from it, so every platform's
// program counts.
func (i *indexImage) ConfigName() (v1.Hash, error) { return i.index.Digest() }

// Manifest is refused: an index has none.
func (i *indexImage) Manifest() (*v1.Manifest, error) {
	return nil, fmt.Errorf("an image index has no image manifest")
}

// Index is the image index the image stands for.
func (i *indexImage) Index() v1.ImageIndex { return i.index }
