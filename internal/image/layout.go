package image

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
)

// RefNameAnnotation names an image inside an OCI layout's index.
const RefNameAnnotation = "org.opencontainers.image.ref.name"

// LayoutImage is an image to write into a layout and the reference it is known by.
type LayoutImage struct {
	Ref   string
	Image v1.Image
}

// WriteLayout writes imgs into an OCI image layout at dir, each annotated with its reference.
// The index lists exactly imgs, in their order; blobs already in dir are kept, so rewriting a
// layout after a small change writes only what changed.
func WriteLayout(dir string, imgs []LayoutImage) error {
	idx := v1.ImageIndex(empty.Index)
	for _, li := range imgs {
		var add mutate.Appendable = li.Image
		if ix, ok := li.Image.(*indexImage); ok {
			add = ix.Index() // a multi-platform image goes in as the index it is
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{
			Add:        add,
			Descriptor: v1.Descriptor{Annotations: map[string]string{RefNameAnnotation: li.Ref}},
		})
	}
	if _, err := layout.Write(dir, idx); err != nil {
		return fmt.Errorf("layout %s: %w", dir, err)
	}
	return sameFileMode(dir)
}

// layoutFileMode is the mode of every file of a layout. The library writes layers through a
// temporary file (0600), other blobs with 0666 less the umask, and index.json and oci-layout
// with 0777 less the umask: a layout committed or copied elsewhere should not depend on that.
const layoutFileMode fs.FileMode = 0o644

func sameFileMode(dir string) error {
	return filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if info.Mode().Perm() == layoutFileMode {
			return nil
		}
		if err := os.Chmod(path, layoutFileMode); err != nil {
			return fmt.Errorf("layout %s: %w", dir, err)
		}
		return nil
	})
}
