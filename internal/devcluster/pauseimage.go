package devcluster

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// pauseRepository is the dev registry's repository of the pod sandbox image.
const pauseRepository = "slipway-dev/pause"

// pauseRef is the sandbox image's reference in registry: tagged after the pause program's
// source, so a changed program is a new tag.
func pauseRef(registry string) string {
	return registry + "/" + pauseRepository + ":" + strings.TrimPrefix(pauseBin, "pause-")
}

// pushPause pushes the pause image (the binary at /pause, its entrypoint) to the dev registry
// unless it is there, and returns its reference. containerd pins it as the sandbox image:
// registry.k8s.io is not reachable from every machine the dev environment runs on.
func pushPause(ctx context.Context, registry, bin string) (string, error) {
	refText := pauseRef(registry)
	ref, err := name.ParseReference(refText, name.Insecure)
	if err != nil {
		return "", err
	}
	if _, err := remote.Head(ref, remote.WithContext(ctx)); err == nil {
		return refText, nil
	}
	img, err := pauseImage(bin)
	if err != nil {
		return "", fmt.Errorf("pause image: %w", err)
	}
	if err := remote.Write(ref, img, remote.WithContext(ctx)); err != nil {
		return "", fmt.Errorf("push %s: %w", refText, err)
	}
	return refText, nil
}

// pauseImage is a one-layer image holding bin as /pause.
func pauseImage(bin string) (v1.Image, error) {
	b, err := os.ReadFile(bin)
	if err != nil {
		return nil, err
	}
	var layerTar bytes.Buffer
	tw := tar.NewWriter(&layerTar)
	if err := tw.WriteHeader(&tar.Header{Name: "pause", Mode: 0o755, Size: int64(len(b)), Typeflag: tar.TypeReg, ModTime: time.Unix(0, 0)}); err != nil {
		return nil, err
	}
	if _, err := tw.Write(b); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar.Bytes())), nil
	})
	if err != nil {
		return nil, err
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", runtime.GOARCH
	cf.Config.Entrypoint = []string{"/pause"}
	return mutate.ConfigFile(img, cf)
}
