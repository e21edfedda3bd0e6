package devcluster_test

import (
	"archive/tar"
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"slipway.dev/slipway/internal/devcluster"
	"slipway.dev/slipway/internal/devcluster/devtest"
)

// TestBaseImagesInRegistry: dev up has pushed both base images to the dev registry under the
// names examples/hello uses, each with its command; the busybox one holds busybox and the
// applet links a node's shell command needs.
func TestBaseImagesInRegistry(t *testing.T) {
	env := devtest.Env(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, tt := range []struct {
		base    string
		command []string
	}{
		{devcluster.BusyboxBase, []string{"/bin/sh"}},
		{devcluster.SystemdBase, []string{"/sbin/init"}},
	} {
		t.Run(tt.base, func(t *testing.T) {
			ref, err := name.ParseReference(env.Registry+"/"+tt.base, name.Insecure)
			if err != nil {
				t.Fatal(err)
			}
			img, err := remote.Image(ref, remote.WithContext(ctx))
			if err != nil {
				t.Fatalf("%s is not in the dev registry: %v", ref, err)
			}
			cf, err := img.ConfigFile()
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(cf.Config.Entrypoint, tt.command) {
				t.Errorf("entrypoint %q, want %q", cf.Config.Entrypoint, tt.command)
			}
			if tt.base != devcluster.BusyboxBase {
				return // 50 MB to read: its tree is checked by TestSystemdTree
			}
			links := layerLinks(t, img)
			for _, p := range []string{"bin/sh", "bin/cp", "usr/bin/nc", "usr/sbin/httpd"} {
				if links[p] != devcluster.BusyboxBinary {
					t.Errorf("%s links to %q, want %s", p, links[p], devcluster.BusyboxBinary)
				}
			}
		})
	}
}

// layerLinks maps each symbolic link of img's layers to its target.
func layerLinks(t *testing.T, img v1.Image) map[string]string {
	t.Helper()
	out := map[string]string{}
	for name, h := range layerHeaders(t, img) {
		if h.Typeflag == tar.TypeSymlink {
			out[name] = h.Linkname
		}
	}
	return out
}

// layerHeaders maps each entry of img's layers (its name without a leading "./") to its header,
// a later layer's entry over an earlier one's.
func layerHeaders(t *testing.T, img v1.Image) map[string]*tar.Header {
	t.Helper()
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*tar.Header{}
	for _, l := range layers {
		rc, err := l.Uncompressed()
		if err != nil {
			t.Fatal(err)
		}
		tr := tar.NewReader(rc)
		for {
			h, err := tr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			out[strings.TrimPrefix(h.Name, "./")] = h
		}
		rc.Close()
	}
	return out
}
