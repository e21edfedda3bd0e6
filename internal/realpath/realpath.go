// Package realpath resolves the links of many paths that share their directories, as
// filepath.EvalSymlinks does for one: a group of 1,000 nodes names 1,000 rootfs directories
// under the same few, and EvalSymlinks lstats every component of every path again (on this
// project's machines, a syscall costs about 10 µs: issue 17). A Cache resolves each directory
// once; it assumes the tree does not change while it is used, so it lives for one pass (a
// load, a build of a plan's images) and every read that matters goes through an os.Root anyway.
package realpath

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// maxLinks bounds the links one resolution follows, as the kernel's ELOOP does.
const maxLinks = 255

// ErrTooManyLinks is a resolution that met more than maxLinks links: a loop.
var ErrTooManyLinks = errors.New("too many links")

// Cache remembers the resolved form of the paths it was asked for and of their directories.
// Its zero value is ready; it is safe for concurrent use.
type Cache struct {
	mu sync.Mutex
	m  map[string]string
}

// Eval is filepath.EvalSymlinks(p) for an absolute p: p with every link on it resolved, or the
// error of the component that could not be read (an *fs.PathError naming it). As EvalSymlinks
// does, it walks p component by component, a ".." taking back the last resolved one.
func (c *Cache) Eval(p string) (string, error) {
	if !filepath.IsAbs(p) {
		// Not what the callers pass; the library resolves it against the working directory.
		return filepath.EvalSymlinks(p)
	}
	links := 0
	return c.walk(string(filepath.Separator), p, &links)
}

// walk resolves rest from base, which has no links left. Each base/component it meets is
// remembered with what it resolved to: with base resolved, that depends on the disk alone.
func (c *Cache) walk(base, rest string, links *int) (string, error) {
	for _, comp := range strings.Split(rest, string(filepath.Separator)) {
		switch comp {
		case "", ".":
			continue
		case "..":
			base = filepath.Dir(base)
			continue
		}
		q := filepath.Join(base, comp)
		if r, ok := c.lookup(q); ok {
			base = r
			continue
		}
		fi, err := os.Lstat(q)
		if err != nil {
			return "", err
		}
		r := q
		if fi.Mode()&os.ModeSymlink != 0 {
			if *links++; *links > maxLinks {
				return "", &os.PathError{Op: "lstat", Path: q, Err: ErrTooManyLinks}
			}
			target, err := os.Readlink(q)
			if err != nil {
				return "", err
			}
			from := base
			if filepath.IsAbs(target) {
				from = string(filepath.Separator)
			}
			if r, err = c.walk(from, target, links); err != nil {
				return "", err
			}
		}
		c.store(q, r)
		base = r
	}
	return base, nil
}

func (c *Cache) lookup(p string) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.m[p]
	return r, ok
}

func (c *Cache) store(p, r string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]string{}
	}
	c.m[p] = r
}
