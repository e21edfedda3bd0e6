package image

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// The paths of a Source come from the group file, whose loader checked that they stay inside
// its directory (Source.Context). A check is not enough: between it and a read of the build,
// which for a push may come much later, a rootfs, an archive or a directory on the way can be
// swapped for a link leading out (a checkout, another process). So every pass opens them anew
// through an os.Root of the context, which follows no link out of it whenever it appears.

// contextRel is p relative to dir, refused when it leaves it.
func contextRel(dir, p string) (string, error) {
	rel, err := filepath.Rel(dir, p)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", fmt.Errorf("outside the group directory %s", dir)
	}
	return rel, nil
}

// openTreeIn opens the directory p as a root of its own, reached through dir; dir "" is no
// limit but p itself.
func openTreeIn(dir, p string) (*os.Root, error) {
	return openIn(dir, p, os.OpenRoot, (*os.Root).OpenRoot)
}

// openFileIn opens the file p for reading (readFlags), reached through dir; dir "" is no limit.
func openFileIn(dir, p string) (*os.File, error) {
	return openIn(dir, p,
		func(p string) (*os.File, error) { return os.OpenFile(p, readFlags, 0) },
		func(in *os.Root, rel string) (*os.File, error) { return in.OpenFile(rel, readFlags, 0) })
}

// openIn opens p with open, within an os.Root of dir, or with plain where dir is "".
func openIn[T any](dir, p string, plain func(string) (T, error), open func(*os.Root, string) (T, error)) (T, error) {
	if dir == "" {
		return plain(p)
	}
	var none T
	rel, err := contextRel(dir, p)
	if err != nil {
		return none, err
	}
	in, err := os.OpenRoot(dir)
	if err != nil {
		return none, err
	}
	defer in.Close()
	return open(in, rel)
}
