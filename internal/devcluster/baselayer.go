package devcluster

import (
	"archive/tar"
	"compress/gzip"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// baseImage returns the image of a base's tree, one layer and the command, and its digest.
// The layer is written once to <tree>.layer.tar.gz (the tree is cached, so is its layer) and
// the digest to <tree>.digest, so a dev up whose registry already holds the image reads neither
// the tree nor the layer. The package does not use internal/image: its tests start the dev
// cluster (devtest), which would make an import cycle. Unlike a node's rootfs, the tree keeps
// its owners and modes (a Debian tree has files of group shadow, mail, messagebus); times are
// the epoch, entries sorted, so the same tree gives the same layer.
func baseImage(tree string, command []string) (v1.Image, v1.Hash, error) {
	layerPath, digestPath := tree+".layer.tar.gz", tree+".digest"
	if _, err := os.Stat(layerPath); err != nil {
		if err := writeLayer(tree, layerPath); err != nil {
			return nil, v1.Hash{}, err
		}
		_ = os.Remove(digestPath)
	}
	layer, err := tarball.LayerFromFile(layerPath, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, v1.Hash{}, err
	}
	img, err := mutate.AppendLayers(mutate.MediaType(empty.Image, types.OCIManifestSchema1), layer)
	if err != nil {
		return nil, v1.Hash{}, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, v1.Hash{}, err
	}
	cf = cf.DeepCopy()
	cf.Architecture, cf.OS = "amd64", "linux"
	cf.Config.Entrypoint = command
	cf.Config.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		return nil, v1.Hash{}, err
	}
	if b, err := os.ReadFile(digestPath); err == nil {
		if h, err := v1.NewHash(string(b)); err == nil {
			return img, h, nil
		}
	}
	h, err := img.Digest()
	if err != nil {
		return nil, v1.Hash{}, err
	}
	return img, h, os.WriteFile(digestPath, []byte(h.String()), 0o644)
}

// TreeLayer writes tree as one gzipped tar layer to path, the way the base images are written
// (owners and modes kept, the epoch as every time, entries sorted), and returns it: for tests
// that need an image of a tree slipway does not build itself.
func TreeLayer(tree, path string) (v1.Layer, error) {
	if err := writeLayer(tree, path); err != nil {
		return nil, err
	}
	return tarball.LayerFromFile(path, tarball.WithMediaType(types.OCILayer))
}

// writeLayer writes tree as a gzipped tar to path (through a temporary file and a rename: two
// dev ups of different data directories may write it at once).
func writeLayer(tree, path string) error {
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if err := f.Chmod(0o644); err != nil {
		return err
	}
	zw := gzip.NewWriter(f)
	tw := tar.NewWriter(zw)
	links := map[uint64]string{} // inode → first name, for hard links
	err = filepath.WalkDir(tree, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == tree {
			return err
		}
		return addEntry(tw, tree, p, links)
	})
	for _, c := range []io.Closer{tw, zw} {
		if cerr := c.Close(); err == nil {
			err = cerr
		}
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("layer of %s: %w", tree, err)
	}
	return os.Rename(f.Name(), path)
}

// addEntry writes the entry of p: directories, files, links; sockets, pipes and devices are
// left out (the runtime gives the container its /dev).
func addEntry(tw *tar.Writer, tree, p string, links map[uint64]string) error {
	fi, err := os.Lstat(p)
	if err != nil {
		return err
	}
	if fi.Mode()&(fs.ModeSocket|fs.ModeNamedPipe|fs.ModeDevice|fs.ModeCharDevice) != 0 {
		return nil
	}
	target := ""
	if fi.Mode()&fs.ModeSymlink != 0 {
		if target, err = os.Readlink(p); err != nil {
			return err
		}
	}
	hdr, err := tar.FileInfoHeader(fi, target)
	if err != nil {
		return err
	}
	rel, _ := filepath.Rel(tree, p)
	hdr.Name = filepath.ToSlash(rel)
	if fi.IsDir() {
		hdr.Name += "/"
	}
	hdr.Uname, hdr.Gname = "", ""
	hdr.ModTime, hdr.AccessTime, hdr.ChangeTime = time.Unix(0, 0), time.Time{}, time.Time{}
	hdr.Format = tar.FormatPAX
	st, _ := fi.Sys().(*syscall.Stat_t)
	if fi.Mode().IsRegular() && st != nil && st.Nlink > 1 {
		if first, ok := links[st.Ino]; ok {
			hdr.Typeflag, hdr.Linkname, hdr.Size = tar.TypeLink, first, 0
			return tw.WriteHeader(hdr)
		}
		links[st.Ino] = hdr.Name
	}
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return nil
	}
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(tw, f)
	return err
}
