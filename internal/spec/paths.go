package spec

import (
	"os"
	"path"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"
)

// addFile reads one `add:` entry: its src must stay inside the group directory, and a dst
// ending in / is a directory that takes the source's base name, as cp does.
func (d *decoder) addFile(it *yaml.Node, am map[string]*yaml.Node, ip string) AddFile {
	var f AddFile
	written := ""
	if sv := am["src"]; sv != nil {
		if s, ok := d.str(sv, ip+".src"); ok {
			written = s
			f.Src = d.addSource(deref(sv), ip+".src", s)
		}
	} else {
		d.lacks(deref(it), ip, "src", "is required")
	}
	if sv := am["dst"]; sv != nil {
		if s, ok := d.str(sv, ip+".dst"); ok {
			f.Dst = d.addDest(deref(sv), ip+".dst", s, written)
		}
	} else {
		d.lacks(deref(it), ip, "dst", "is required")
	}
	return f
}

// addSource resolves src against the group directory and refuses a path that leaves it (see
// groupPath). Links inside a directory source are not followed here: they go into the image
// as links.
func (d *decoder) addSource(n *yaml.Node, p, src string) string {
	abs, _ := d.groupPath(n, p, src, "")
	return abs
}

// groupPath resolves src, a path the file names (a rootfs, an archive, an added file, a
// config file), against the group directory and refuses a path that leaves it, by its own
// `..` or absolute form or through a symlink (of the path itself or of a directory on the
// way): the group directory is the build context, as Docker's is for COPY, so `rootfs: /` or
// a link to /etc/shadow must not put the machine's files into a pushed image. noun names what
// a missing path should have been ("directory ", "file " or ""). ok is false when an error
// was reported.
func (d *decoder) groupPath(n *yaml.Node, p, src, noun string) (abs string, ok bool) {
	if filepath.IsAbs(src) {
		d.errAt(n, p, "%s is an absolute path: write it relative to the group file's directory", shown(src))
		return filepath.Clean(src), false
	}
	abs = filepath.Join(d.dir, src)
	if !within(d.dir, abs) {
		d.errAt(n, p, "%s is outside the group file's directory", shown(src))
		return abs, false
	}
	real, err := d.links.Eval(abs)
	if err != nil {
		if _, lerr := os.Lstat(abs); lerr != nil {
			d.errAt(n, p, "%s%s does not exist", noun, shown(src))
		} else {
			d.errAt(n, p, "%s is a link to nothing (%v)", shown(src), unwrapPath(err))
		}
		return abs, false
	}
	dir, err := d.links.Eval(d.dir)
	if err != nil {
		dir = d.dir
	}
	if !within(dir, real) {
		d.errAt(n, p, "%s resolves to %s, outside the group file's directory", shown(src), shown(real))
		return abs, false
	}
	return abs, true
}

// within reports whether p is dir or under it (both clean and absolute).
func within(dir, p string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// unwrapPath keeps the cause of a path error without repeating the path.
func unwrapPath(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err
	}
	return err
}

// addDest checks dst is absolute; a dst ending in / names a directory, and the entry lands at
// its source's base name under it, as `cp SRC DIR/` does.
func (d *decoder) addDest(n *yaml.Node, p, dst, src string) string {
	if !strings.HasPrefix(dst, "/") {
		d.errAt(n, p, "%q is not an absolute file path", dst)
		return dst
	}
	if !strings.HasSuffix(dst, "/") {
		return dst
	}
	if src == "" {
		return dst // the source's own error is reported
	}
	out := path.Join(dst, path.Base(filepath.ToSlash(src)))
	if out == "/" {
		d.errAt(n, p, "%q with source %s is the image's root: name a directory or a file under it", dst, shown(src))
	}
	return out
}
