package image

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
)

// TestLabelIsTheConfigFilesLabel: Label reads what v1.ConfigFile's parse gives, for a rootfs
// image slipway builds and for an image whose config was written by the registry library.
func TestLabelIsTheConfigFilesLabel(t *testing.T) {
	root := filepath.Join(t.TempDir(), "rootfs")
	if err := os.MkdirAll(filepath.Join(root, "etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	cf, err := empty.Image.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cf.Config.Labels = map[string]string{"dev.slipway.state.version": "3", "other": "x"}
	foreign, err := mutate.ConfigFile(empty.Image, cf)
	if err != nil {
		t.Fatal(err)
	}
	b := NewBuilder(Options{})
	for _, tc := range []struct {
		name   string
		labels map[string]string
		key    string
		want   string
	}{
		{"label set", map[string]string{"dev.slipway.state.version": "2"}, "dev.slipway.state.version", "2"},
		{"other labels only", map[string]string{"a": "b"}, "dev.slipway.state.version", ""},
		{"no labels", nil, "dev.slipway.state.version", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			img, _, err := b.Build(context.Background(), Source{Rootfs: root, Labels: tc.labels})
			if err != nil {
				t.Fatal(err)
			}
			got, err := Label(img, tc.key)
			if err != nil {
				t.Fatal(err)
			}
			parsed, err := img.ConfigFile()
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want || got != parsed.Config.Labels[tc.key] {
				t.Errorf("Label = %q, want %q (ConfigFile: %q)", got, tc.want, parsed.Config.Labels[tc.key])
			}
		})
	}
	t.Run("config written by the library", func(t *testing.T) {
		if got, err := Label(foreign, "dev.slipway.state.version"); err != nil || got != "3" {
			t.Errorf("Label = %q, %v; want 3", got, err)
		}
	})
}
