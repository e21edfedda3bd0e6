package image

import (
	"archive/tar"
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/partial"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// archiveFile is an archive's path p, opened anew for each read through the directory dir
// (Source.Context; "" is no limit).
type archiveFile struct{ dir, p string }

func (a archiveFile) open() (*os.File, error) { return openFileIn(a.dir, a.p) }

// loadArchive opens a docker-archive (`docker save`, tarball.Write) or a tar of an OCI image
// layout. Either way the image keeps its own manifest and blobs, so it is pushed as it is.
func loadArchive(p archiveFile) (v1.Image, error) {
	what := "archive " + p.p
	names, err := tarNames(p)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	switch {
	case names["oci-layout"] && names["index.json"]:
		img, err := ociArchiveImage(p, names)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		return img, nil
	case names["manifest.json"]:
		img, err := tarball.Image(func() (io.ReadCloser, error) { return p.open() }, nil)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		return img, nil
	}
	return nil, fmt.Errorf("%s: neither a docker-archive (manifest.json) nor an OCI layout (oci-layout, index.json)", what)
}

// tarNames lists the regular files of a tar, names cleaned of a leading "./".
func tarNames(p archiveFile) (map[string]bool, error) {
	f, err := p.open()
	if err != nil {
		return nil, err
	}
	defer f.Close()
	br := bufio.NewReader(f)
	if magic, _ := br.Peek(2); bytes.Equal(magic, []byte{0x1f, 0x8b}) {
		return nil, errors.New("gzip-compressed; give the uncompressed tar")
	}
	names := map[string]bool{}
	tr := tar.NewReader(br)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return names, nil
		}
		if err != nil {
			return nil, fmt.Errorf("not a tar: %w", err)
		}
		if h.Typeflag == tar.TypeReg {
			names[path.Clean(h.Name)] = true
		}
	}
}

// openInTar returns the content of the entry name. The tar is read again from the start; the
// tar reader seeks over the content of other entries, so this costs one header read per entry.
func openInTar(p archiveFile, name string) (io.ReadCloser, error) {
	f, err := p.open()
	if err != nil {
		return nil, err
	}
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err != nil {
			f.Close()
			if errors.Is(err, io.EOF) {
				return nil, fmt.Errorf("%s: not in the archive", name)
			}
			return nil, err
		}
		if path.Clean(h.Name) == name {
			return struct {
				io.Reader
				io.Closer
			}{tr, f}, nil
		}
	}
}

func readInTar(p archiveFile, name string) ([]byte, error) {
	rc, err := openInTar(p, name)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(rc)
}

// ociArchiveImage reads the image of an OCI layout tar without unpacking it: blobs are read in
// place when the push needs them. index.json names one image, or an index whose linux/amd64
// image (else its first) is taken.
func ociArchiveImage(p archiveFile, names map[string]bool) (v1.Image, error) {
	raw, err := readInTar(p, "index.json")
	if err != nil {
		return nil, err
	}
	blob := func(h v1.Hash) string { return path.Join("blobs", h.Algorithm, h.Hex) }
	for depth := 0; depth < 4; depth++ {
		var idx v1.IndexManifest
		if err := json.Unmarshal(raw, &idx); err != nil {
			return nil, fmt.Errorf("index: %w", err)
		}
		desc, err := pickManifest(idx.Manifests)
		if err != nil {
			return nil, err
		}
		if !names[blob(desc.Digest)] {
			return nil, fmt.Errorf("manifest %s: not in the archive", desc.Digest)
		}
		if raw, err = readInTar(p, blob(desc.Digest)); err != nil {
			return nil, err
		}
		if desc.MediaType.IsIndex() {
			continue
		}
		core := &ociArchiveCore{path: p, manifest: raw, mediaType: desc.MediaType, blob: blob}
		var m v1.Manifest
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, fmt.Errorf("manifest %s: %w", desc.Digest, err)
		}
		if core.config, err = readInTar(p, blob(m.Config.Digest)); err != nil {
			return nil, fmt.Errorf("config: %w", err)
		}
		core.layers = m.Layers
		return partial.CompressedToImage(core)
	}
	return nil, errors.New("index: nested too deep")
}

func pickManifest(ds []v1.Descriptor) (v1.Descriptor, error) {
	var found []v1.Descriptor
	for _, d := range ds {
		if d.MediaType.IsImage() || d.MediaType.IsIndex() {
			found = append(found, d)
		}
	}
	if len(found) == 0 {
		return v1.Descriptor{}, errors.New("index: no image")
	}
	for _, d := range found {
		if d.Platform != nil && d.Platform.OS == "linux" && d.Platform.Architecture == "amd64" {
			return d, nil
		}
	}
	return found[0], nil
}

type ociArchiveCore struct {
	path      archiveFile
	manifest  []byte
	mediaType types.MediaType
	config    []byte
	layers    []v1.Descriptor
	blob      func(v1.Hash) string
}

func (c *ociArchiveCore) RawConfigFile() ([]byte, error)      { return c.config, nil }
func (c *ociArchiveCore) MediaType() (types.MediaType, error) { return c.mediaType, nil }
func (c *ociArchiveCore) RawManifest() ([]byte, error)        { return c.manifest, nil }

func (c *ociArchiveCore) LayerByDigest(h v1.Hash) (partial.CompressedLayer, error) {
	for _, d := range c.layers {
		if d.Digest == h {
			return &archiveBlob{path: c.path, name: c.blob(h), desc: d}, nil
		}
	}
	return nil, fmt.Errorf("layer %s: not in the manifest", h)
}

// archiveBlob is a layer blob of an OCI layout tar, read as it is.
type archiveBlob struct {
	path archiveFile
	name string
	desc v1.Descriptor
}

func (b *archiveBlob) Digest() (v1.Hash, error)            { return b.desc.Digest, nil }
func (b *archiveBlob) Size() (int64, error)                { return b.desc.Size, nil }
func (b *archiveBlob) MediaType() (types.MediaType, error) { return b.desc.MediaType, nil }
func (b *archiveBlob) Compressed() (io.ReadCloser, error)  { return openInTar(b.path, b.name) }
