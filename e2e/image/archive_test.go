package image_test

import (
	"archive/tar"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"slipway.dev/slipway/internal/image"
)

// tarDir writes the directory dir as a tar file at out.
func tarDir(t *testing.T, dir, out string) {
	t.Helper()
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tw := tar.NewWriter(f)
	if err := tw.AddFS(os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestArchivesKeepTheirDigest(t *testing.T) {
	reg := devRegistry(t)
	opts := image.Options{Registry: reg}
	ns := uniqueNamespace(t)
	orig, err := random.Image(3000, 3)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()

	docker := filepath.Join(dir, "docker.tar")
	tag, _ := name.NewTag("example.org/x:y")
	if err := tarball.WriteToFile(docker, tag, orig); err != nil {
		t.Fatal(err)
	}
	ociDir := filepath.Join(dir, "oci")
	p, err := layout.Write(ociDir, empty.Index)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.AppendImage(orig); err != nil {
		t.Fatal(err)
	}
	oci := filepath.Join(dir, "oci.tar")
	tarDir(t, ociDir, oci)

	// As buildx writes it: index.json names an index of platform images; amd64 is not first.
	other, err := random.Image(100, 1)
	if err != nil {
		t.Fatal(err)
	}
	multi := mutate.AppendManifests(empty.Index,
		mutate.IndexAddendum{Add: other, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "arm64"}}},
		mutate.IndexAddendum{Add: orig, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "amd64"}}},
	)
	multiDir := filepath.Join(dir, "multi")
	mp, err := layout.Write(multiDir, empty.Index)
	if err != nil {
		t.Fatal(err)
	}
	if err := mp.AppendIndex(multi); err != nil {
		t.Fatal(err)
	}
	multiTar := filepath.Join(dir, "multi.tar")
	tarDir(t, multiDir, multiTar)

	want, err := orig.Digest()
	if err != nil {
		t.Fatal(err)
	}
	pub, err := image.NewPublisher(opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, path string }{{"docker-archive", docker}, {"oci-layout", oci}, {"oci-layout-index", multiTar}} {
		t.Run(tc.name, func(t *testing.T) {
			job := image.Job{Name: tc.name, Repository: image.Repository(reg, ns, tc.name), Source: image.Source{Archive: tc.path}}
			res, err := image.Push(context.Background(), image.NewBuilder(opts), pub, job, nil)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want.String(), res.Digest.DigestStr()); diff != "" {
				t.Errorf("pushed digest (-want +got):\n%s", diff)
			}
			cfg, _ := orig.ConfigName()
			if diff := cmp.Diff(job.Repository+":c-"+cfg.Hex[:16], res.Tag); diff != "" {
				t.Errorf("tag (-want +got):\n%s", diff)
			}
			// What the registry holds is the original, blob for blob.
			ref, _ := name.ParseReference(res.Digest.String())
			got, err := remote.Image(ref)
			if err != nil {
				t.Fatal(err)
			}
			gm, _ := got.RawManifest()
			om, _ := orig.RawManifest()
			if diff := cmp.Diff(string(om), string(gm)); diff != "" {
				t.Errorf("manifest in the registry (-want +got):\n%s", diff)
			}
		})
	}
}

// TestBinariesPush: the index goes to the registry whole, and its tag names the index.
func TestBinariesPush(t *testing.T) {
	proxy := registryProxy(t)
	opts := image.Options{Registry: proxy.Host()}
	pub, err := image.NewPublisher(opts)
	if err != nil {
		t.Fatal(err)
	}
	job := image.Job{Name: "web-sso/secrets", Repository: image.Repository(opts.Registry, uniqueNamespace(t), "web-sso/secrets"), Source: binariesSource("A", "B")}
	res, err := image.Push(context.Background(), image.NewBuilder(opts), pub, job, nil)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := name.ParseReference(res.Digest.String(), name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	ix, err := remote.Index(ref)
	if err != nil {
		t.Fatal(err)
	}
	m, err := ix.IndexManifest()
	if err != nil || len(m.Manifests) != 2 {
		t.Fatalf("pulled index: %v, %v", m, err)
	}
	h, found, err := pub.Lookup(context.Background(), res.Tag)
	if err != nil || !found || job.Repository+"@"+h.String() != res.Digest.String() {
		t.Errorf("tag %s names %s (found %v, %v), want %s", res.Tag, h, found, err, res.Digest)
	}
}

func binariesSource(amd64, arm64 string) image.Source {
	return image.Source{Binaries: &image.Binaries{Path: "/slipway-secrets", Command: []string{"/slipway-secrets", "run"},
		ByPlatform: map[string][]byte{"linux/amd64": []byte(amd64), "linux/arm64": []byte(arm64)}}}
}
