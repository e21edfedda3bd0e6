package image

import (
	"archive/tar"
	"context"
	"io"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

func binariesSource(amd64, arm64 string) Source {
	return Source{Binaries: &Binaries{Path: "/slipway-secrets", Command: []string{"/slipway-secrets", "run"},
		ByPlatform: map[string][]byte{"linux/amd64": []byte(amd64), "linux/arm64": []byte(arm64)}}}
}

// TestBinariesReproducible: the same programs give the same index digest and tag; a new
// program of one platform gives another of both.
func TestBinariesReproducible(t *testing.T) {
	b := NewBuilder(Options{})
	digest := func(src Source) (string, string) {
		img, _, err := b.Build(context.Background(), src)
		if err != nil {
			t.Fatal(err)
		}
		d, err := img.Digest()
		if err != nil {
			t.Fatal(err)
		}
		tag, err := b.Tag(img)
		if err != nil {
			t.Fatal(err)
		}
		return d.String(), tag
	}
	d1, t1 := digest(binariesSource("amd64 program", "arm64 program"))
	d2, t2 := digest(binariesSource("amd64 program", "arm64 program"))
	if d1 != d2 || t1 != t2 {
		t.Errorf("two builds: %s %s and %s %s", d1, t1, d2, t2)
	}
	d3, t3 := digest(binariesSource("amd64 program", "arm64 program v2"))
	if d3 == d1 || t3 == t1 {
		t.Errorf("a new arm64 program kept digest %s or tag %s", d3, t3)
	}
}

// TestBinariesLayout: an OCI index of one image per platform, each of one layer with only the
// program, mode 0555, owned by 65532, and the command.
func TestBinariesLayout(t *testing.T) {
	img, _, err := NewBuilder(Options{}).Build(context.Background(), binariesSource("A", "B"))
	if err != nil {
		t.Fatal(err)
	}
	ix := img.(*indexImage).Index()
	if mt, _ := img.MediaType(); mt != types.OCIImageIndex {
		t.Errorf("media type %s", mt)
	}
	m, err := ix.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"amd64": "A", "arm64": "B"}
	if len(m.Manifests) != 2 {
		t.Fatalf("%d manifests, want 2", len(m.Manifests))
	}
	for _, desc := range m.Manifests {
		sub, err := ix.Image(desc.Digest)
		if err != nil {
			t.Fatal(err)
		}
		cf, _ := sub.ConfigFile()
		if desc.Platform == nil || desc.Platform.OS != "linux" || cf.Architecture != desc.Platform.Architecture {
			t.Errorf("platform %+v, config arch %s", desc.Platform, cf.Architecture)
		}
		if diff := cmp.Diff([]string{"/slipway-secrets", "run"}, cf.Config.Entrypoint); diff != "" {
			t.Errorf("entrypoint (-want +got):\n%s", diff)
		}
		layers, _ := sub.Layers()
		if len(layers) != 1 {
			t.Fatalf("%d layers", len(layers))
		}
		rc, _ := layers[0].Uncompressed()
		tr := tar.NewReader(rc)
		h, err := tr.Next()
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(tr)
		if h.Name != "slipway-secrets" || h.Mode != 0o555 || h.Uid != 65532 || string(body) != want[cf.Architecture] {
			t.Errorf("entry %s mode %o uid %d content %q", h.Name, h.Mode, h.Uid, body)
		}
		if _, err := tr.Next(); err != io.EOF {
			t.Errorf("more than one entry: %v", err)
		}
	}
}

// TestBinariesInLayout: `images build` writes the index into the layout whole.
func TestBinariesInLayout(t *testing.T) {
	img, _, err := NewBuilder(Options{}).Build(context.Background(), binariesSource("A", "B"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := WriteLayout(dir, []LayoutImage{{Ref: "demo/web-sso/secrets:c-1", Image: img}}); err != nil {
		t.Fatal(err)
	}
	p, err := layout.FromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	top, err := p.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	m, _ := top.IndexManifest()
	want, _ := img.Digest()
	if len(m.Manifests) != 1 || m.Manifests[0].Digest != want || m.Manifests[0].MediaType != types.OCIImageIndex {
		t.Errorf("layout index %+v, want the sidecar's index %s", m.Manifests, want)
	}
}
