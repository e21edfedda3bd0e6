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

// TestUser (issue 43 item 5): Source.User becomes the image config's User in a rootfs image
// (none without it) and in a base or archive image's config, which keeps its own without it;
// an image that already has it is left as it is, digest and all.
func TestUser(t *testing.T) {
	root := filepath.Join(t.TempDir(), "rootfs")
	if err := os.MkdirAll(filepath.Join(root, "etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	rootfs := func(user string) v1.Image {
		img, _, err := NewBuilder(Options{}).Build(context.Background(), Source{Rootfs: root, User: user})
		if err != nil {
			t.Fatal(err)
		}
		return img
	}
	config := func(img v1.Image) func(string) v1.Image {
		return func(user string) v1.Image {
			out, err := withConfig(img, Source{User: user}, "test image")
			if err != nil {
				t.Fatal(err)
			}
			return out
		}
	}
	hasIt, err := mutate.Config(empty.Image, v1.Config{User: "65532"})
	if err != nil {
		t.Fatal(err)
	}
	asRoot, err := mutate.Config(empty.Image, v1.Config{User: "0"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		build     func(string) v1.Image
		without   string // the config's User when Source has none
		unchanged bool   // the image with 65532 is the image without, digest and all
	}{
		{name: "rootfs", build: rootfs},
		{name: "base or archive", build: config(empty.Image)},
		{name: "base or archive as root", build: config(asRoot), without: "0"},
		{name: "already has it", build: config(hasIt), without: "65532", unchanged: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			with, without := tc.build("65532"), tc.build("")
			for _, c := range []struct {
				img  v1.Image
				want string
			}{{with, "65532"}, {without, tc.without}} {
				cf, err := c.img.ConfigFile()
				if err != nil {
					t.Fatal(err)
				}
				if cf.Config.User != c.want {
					t.Errorf("User %q, want %q", cf.Config.User, c.want)
				}
			}
			tw, _ := TagFor(with)
			tn, _ := TagFor(without)
			if (tw == tn) != tc.unchanged {
				t.Errorf("tags with and without the user: %s and %s; want them equal: %v", tw, tn, tc.unchanged)
			}
		})
	}
}
