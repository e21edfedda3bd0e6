package image

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
)

// TestStopSignal: Source.StopSignal becomes the image config's StopSignal (which the runtime
// sends when the pod names none) in a rootfs image and in a base or archive image's config; an
// image that already has it is left as it is, digest and all.
func TestStopSignal(t *testing.T) {
	root := filepath.Join(t.TempDir(), "rootfs")
	if err := os.MkdirAll(filepath.Join(root, "etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	rootfs := func(sig string) v1.Image {
		img, _, err := NewBuilder(Options{}).Build(context.Background(), Source{Rootfs: root, StopSignal: sig})
		if err != nil {
			t.Fatal(err)
		}
		return img
	}
	config := func(img v1.Image) func(sig string) v1.Image {
		return func(sig string) v1.Image {
			out, err := withConfig(img, Source{StopSignal: sig}, "test image")
			if err != nil {
				t.Fatal(err)
			}
			return out
		}
	}
	cf, err := empty.Image.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cf.Config.StopSignal = "SIGRTMIN+3"
	hasIt, err := mutate.ConfigFile(empty.Image, cf)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		build     func(sig string) v1.Image
		without   string // the config's StopSignal when Source has none
		unchanged bool   // the image with SIGRTMIN+3 is the image without, digest and all
	}{
		{name: "rootfs", build: rootfs},
		{name: "base or archive", build: config(empty.Image)},
		{name: "already has it", build: config(hasIt), without: "SIGRTMIN+3", unchanged: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			with, without := tc.build("SIGRTMIN+3"), tc.build("")
			for _, c := range []struct {
				img  v1.Image
				want string
			}{{with, "SIGRTMIN+3"}, {without, tc.without}} {
				cf, err := c.img.ConfigFile()
				if err != nil {
					t.Fatal(err)
				}
				if cf.Config.StopSignal != c.want {
					t.Errorf("StopSignal %q, want %q", cf.Config.StopSignal, c.want)
				}
			}
			dw, _ := with.Digest()
			dn, _ := without.Digest()
			if (dw == dn) != tc.unchanged {
				t.Errorf("digests with and without the stop signal: %s and %s; want them equal: %v", dw, dn, tc.unchanged)
			}
		})
	}
}
