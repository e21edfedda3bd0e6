// Package image_test pushes images to the dev environment's registry (CNCF Distribution): what
// internal/image's unit tests cannot check without one.
package image_test

import (
	"archive/tar"
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"slipway.dev/slipway/internal/devcluster/devtest"
	"slipway.dev/slipway/internal/event"
	"slipway.dev/slipway/internal/image"
	"slipway.dev/slipway/internal/image/imagetest"
)

// devRegistry is the dev cluster's registry (CNCF Distribution), host:port on loopback.
func devRegistry(t *testing.T) string {
	t.Helper()
	return devtest.Env(t).Registry
}

// uniqueNamespace keeps each test's repositories apart, so tests and packages can share the
// registry in parallel and a rerun starts with nothing pushed.
func uniqueNamespace(t *testing.T) string {
	t.Helper()
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return "imagetest-" + hex.EncodeToString(b)
}

// registryProxy records the requests that reach the dev registry through it.
func registryProxy(t *testing.T) *devtest.Proxy {
	t.Helper()
	p, err := devtest.RegistryProxy(devRegistry(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// uploads are the requests that send blob content or open a blob upload.
func uploads(reqs []devtest.Request) []devtest.Request {
	var out []devtest.Request
	for _, r := range reqs {
		if strings.Contains(r.Path, "/blobs/uploads") {
			out = append(out, r)
		}
	}
	return out
}

func TestPushOnce(t *testing.T) {
	proxy := registryProxy(t)
	opts := image.Options{Registry: proxy.Host()}
	root := t.TempDir()
	imagetest.WriteTree(t, root)
	pub, err := image.NewPublisher(opts)
	if err != nil {
		t.Fatal(err)
	}
	job := image.Job{Name: "web", Repository: image.Repository(opts.Registry, uniqueNamespace(t), "web"), Source: image.Source{Rootfs: root}}

	var events []event.Image
	var mu sync.Mutex
	emit := func(e event.Image) { mu.Lock(); events = append(events, e); mu.Unlock() }
	first, err := image.Push(context.Background(), image.NewBuilder(opts), pub, job, emit)
	if err != nil {
		t.Fatal(err)
	}
	if got := uploads(proxy.Take()); len(got) == 0 || !first.Pushed {
		t.Fatalf("first push: uploads %v, pushed %v: want an upload", got, first.Pushed)
	}
	if !strings.HasPrefix(first.Digest.String(), job.Repository+"@sha256:") {
		t.Errorf("digest %s: want %s@sha256:…", first.Digest, job.Repository)
	}
	if events[len(events)-1].Kind != event.ImagePushed {
		t.Errorf("last event %+v: want pushed", events[len(events)-1])
	}

	t.Run("unchanged", func(t *testing.T) {
		// A new publisher, as a new slipway process would have.
		pub, err := image.NewPublisher(opts)
		if err != nil {
			t.Fatal(err)
		}
		second, err := image.Push(context.Background(), image.NewBuilder(opts), pub, job, nil)
		if err != nil {
			t.Fatal(err)
		}
		reqs := proxy.Take()
		if diff := cmp.Diff(first.Digest.String(), second.Digest.String()); diff != "" || second.Pushed {
			t.Errorf("second push: pushed %v, digest (-want +got):\n%s", second.Pushed, diff)
		}
		if len(uploads(reqs)) > 0 || len(reqs) > 5 {
			t.Errorf("second push made %d requests %v: want no upload and at most 5", len(reqs), reqs)
		}
	})

	t.Run("lookup", func(t *testing.T) {
		// The publisher's lookup is how the plan pins an image it does not push: a HEAD
		// request gives the tag's digest, and a tag that is not there is not found.
		h, found, err := pub.Lookup(context.Background(), first.Tag)
		if err != nil || !found {
			t.Fatalf("lookup of %s: found %v, %v", first.Tag, found, err)
		}
		if diff := cmp.Diff(first.Digest.DigestStr(), h.String()); diff != "" {
			t.Errorf("lookup (-want +got):\n%s", diff)
		}
		if _, found, err := pub.Lookup(context.Background(), job.Repository+":c-0000000000000000"); err != nil || found {
			t.Errorf("lookup of a missing tag: found %v, %v; want not found", found, err)
		}
	})

	t.Run("changed layer only", func(t *testing.T) {
		// Changing the label alone keeps the layer: only the config and manifest go up.
		job := job
		job.Source.Labels = map[string]string{image.ServedLabel: "tcp/80"}
		res, err := image.Push(context.Background(), image.NewBuilder(opts), pub, job, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !res.Pushed || res.Digest == first.Digest {
			t.Errorf("push with a new label: %+v, want a new digest", res)
		}
		var blobPuts int
		for _, r := range proxy.Take() {
			if r.Method == http.MethodPut && strings.Contains(r.Path, "/blobs/uploads") {
				blobPuts++
			}
		}
		if blobPuts != 1 {
			t.Errorf("push with a new label uploaded %d blobs, want 1 (the config)", blobPuts)
		}
	})
}

func TestBaseAndAdd(t *testing.T) {
	reg := devRegistry(t)
	opts := image.Options{Registry: reg}
	ns := uniqueNamespace(t)
	base, err := random.Image(1000, 1)
	if err != nil {
		t.Fatal(err)
	}
	base, err = mutate.Config(base, v1.Config{Entrypoint: []string{"/bin/base"}})
	if err != nil {
		t.Fatal(err)
	}
	baseRef := image.Repository(reg, ns, "base") + ":1"
	r, _ := name.ParseReference(baseRef)
	if err := remote.Write(r, base); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "nginx.conf"), []byte("events {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "site"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "site", "index.html"), []byte("hi"), 0o644); err != nil {
		t.Fatal(err)
	}
	src := image.Source{Base: baseRef, Add: []image.AddFile{
		{Src: filepath.Join(dir, "site"), Dst: "/srv/www"},
		{Src: filepath.Join(dir, "nginx.conf"), Dst: "/etc/nginx/nginx.conf"},
	}}
	b := image.NewBuilder(opts)
	img, _, err := b.Build(context.Background(), src)
	if err != nil {
		t.Fatal(err)
	}
	want := []imagetest.Entry{
		{Name: "etc/nginx/nginx.conf", Type: tar.TypeReg, Mode: 0o644, Size: 10},
		{Name: "srv/www/", Type: tar.TypeDir, Mode: 0o755},
		{Name: "srv/www/index.html", Type: tar.TypeReg, Mode: 0o644, Size: 2},
	}
	if diff := cmp.Diff(want, imagetest.Entries(t, img)); diff != "" {
		t.Errorf("added layer (-want +got):\n%s", diff)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"/bin/base"}, cf.Config.Entrypoint); diff != "" {
		t.Errorf("entrypoint kept from the base (-want +got):\n%s", diff)
	}
	again, _, err := b.Build(context.Background(), src)
	if err != nil {
		t.Fatal(err)
	}
	d1, _ := img.Digest()
	d2, _ := again.Digest()
	if d1 != d2 {
		t.Errorf("two builds of base+add: %s and %s", d1, d2)
	}
	pub, _ := image.NewPublisher(opts)
	res, err := image.Push(context.Background(), b, pub, image.Job{Name: "web", Repository: image.Repository(reg, ns, "web"), Source: src}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Digest.DigestStr() != d1.String() {
		t.Errorf("pushed %s, built %s", res.Digest, d1)
	}

	t.Run("command set", func(t *testing.T) {
		src := src
		src.Command = []string{"/sbin/init"}
		img, _, err := b.Build(context.Background(), src)
		if err != nil {
			t.Fatal(err)
		}
		cf, _ := img.ConfigFile()
		if diff := cmp.Diff([]string{"/sbin/init"}, cf.Config.Entrypoint); diff != "" {
			t.Errorf("entrypoint (-want +got):\n%s", diff)
		}
	})
}
