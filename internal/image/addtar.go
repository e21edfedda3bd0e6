package image

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"time"
)

// addTar writes the added files as a tar stream, each at its destination; a directory source
// is added with its whole content. Parent directories of a destination are not written, so
// the base image's own directories keep their modes and owners. With a context (the group
// directory, Source.Context), every source is read through it: a source, or a directory on
// its way, that is a link leading out of it, even one made after the group file was loaded,
// fails the build.
func addTar(files []AddFile, context string, epoch time.Time) tarSource {
	return func(w io.Writer) ([]string, error) {
		var roots []*os.Root // the context and the directory sources, open until the end
		defer func() {
			for _, r := range roots {
				r.Close()
			}
		}()
		var in *os.Root
		if context != "" {
			r, err := os.OpenRoot(context)
			if err != nil {
				return nil, fmt.Errorf("add: group directory: %w", err)
			}
			roots = append(roots, r)
			in = r
		}
		var entries []addEntry
		at := map[string]int{} // index in entries of each destination
		for _, f := range files {
			dst := path.Clean("/" + f.Dst)[1:]
			if dst == "" {
				return nil, fmt.Errorf("add %s: destination %q is the root", f.Src, f.Dst)
			}
			tree, top, err := addSource(in, f.Src)
			if err != nil {
				return nil, fmt.Errorf("add %s: %w", f.Src, err)
			}
			if tree != nil {
				roots = append(roots, tree)
			}
			err = top.walk(func(rel string, src file) {
				e := addEntry{name: path.Join(dst, filepath.ToSlash(rel)), source: f.Src, src: src}
				if i, ok := at[e.name]; ok { // a later `add` of the same destination wins
					entries[i] = e
					return
				}
				at[e.name] = len(entries)
				entries = append(entries, e)
			})
			if err != nil {
				return nil, fmt.Errorf("add %s: %w", f.Src, err)
			}
		}
		// Sorted by destination, so parents come before children and `add` order does not
		// change the layer (destinations are unique).
		sort.Slice(entries, func(i, j int) bool { return entries[i].name < entries[j].name })
		return writeAdded(w, entries, epoch)
	}
}

// addEntry is one entry of the added layer: its name, the file it is read from and the `add`
// source that file belongs to, which names it in errors.
type addEntry struct {
	name, source string
	src          file
}

// writeAdded writes entries, in their order, as a tar stream.
func writeAdded(w io.Writer, entries []addEntry, epoch time.Time) ([]string, error) {
	var warnings []string
	t := newTarWriter(w, epoch)
	for _, e := range entries {
		fi, err := e.src.info()
		if err == nil {
			var warn string
			warn, err = t.add(e.name, e.src, fi)
			if warn != "" {
				warnings = append(warnings, warn)
			}
		}
		if err != nil {
			return warnings, fmt.Errorf("add %s: %w", e.source, err)
		}
	}
	if err := t.close(); err != nil {
		return warnings, fmt.Errorf("add: %w", err)
	}
	return warnings, nil
}

// addSource is the source p, taken at its target when it is a link, as `COPY` does; links
// inside a directory source stay links. A directory source is read through an os.Root of its
// own, returned to be closed, so that no link in it, even one swapped in during the build, is
// followed out of it. With in (the context), p is reached through it; without, p is the
// caller's own path, with no limit but a directory source's tree.
func addSource(in *os.Root, p string) (*os.Root, file, error) {
	if in == nil {
		top, err := filepath.EvalSymlinks(p)
		if err != nil {
			return nil, file{}, err
		}
		fi, err := os.Stat(top)
		if err != nil || !fi.IsDir() {
			return nil, file{p: top}, err
		}
		tree, err := os.OpenRoot(top)
		return tree, file{in: tree, rel: ".", p: p}, err
	}
	rel, err := contextRel(in.Name(), p)
	if err != nil {
		return nil, file{}, err
	}
	fi, err := in.Stat(rel)
	if err != nil {
		return nil, file{}, err
	}
	if !fi.IsDir() {
		return nil, file{in: in, rel: rel, p: p, follow: true}, nil
	}
	tree, err := in.OpenRoot(rel)
	return tree, file{in: tree, rel: ".", p: p}, err
}

// walk calls fn with every entry of f (f itself, at "."), parents first: a file alone, a
// directory source's tree (rel ".") in lexical order, its links not followed.
func (f file) walk(fn func(rel string, src file)) error {
	if f.in == nil || f.rel != "." {
		fn(".", f)
		return nil
	}
	return fs.WalkDir(f.in.FS(), ".", func(rel string, _ fs.DirEntry, err error) error {
		if err == nil {
			fn(rel, file{in: f.in, rel: rel, p: filepath.Join(f.p, rel)})
		}
		return err
	})
}
