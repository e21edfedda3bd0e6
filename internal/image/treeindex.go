package image

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// treeIndex remembers, per rootfs, the content digest (DiffID) of its tar stream together with
// a digest of what lstat said of every entry when the tree was read, as git's index does for
// its work tree. A plan of N unchanged nodes then costs an lstat of each recorded entry and no
// read of any file or directory (issue 17).
//
// It cannot be fooled from user space: every entry's name, type, mode, size, device, inode,
// link count, mtime and ctime (nanoseconds) must match. An edit, even one of the same length
// whose mtime is set back (touch -r), a chmod, a rename or a replacement moves the ctime,
// which only the kernel sets (to its clock) and nothing can set back. Entries changed so
// recently that a later change could leave the same ctime (the kernel's clock ticks coarsely)
// are not recorded: a tree is recorded only when every entry's ctime and mtime are older than
// racyMargin before the walk began. What remains is what no stat can see: a change of the
// system clock, a write to the raw block device, or a file system whose ctime is not kept by
// the kernel of this machine (a network file system with a skewed server clock). The content
// is still read where it is used: a push compresses the layer from the files and fails when
// their digest is not the recorded one.
//
// A recorded tree is checked without listing a directory, by git's untracked cache's rule: the
// kernel moves a directory's mtime and ctime whenever an entry is made, removed or renamed in
// it, so a directory (the root among them) whose lstat is as recorded has the entries it had,
// and an lstat of each recorded path, in the recorded order, proves the whole tree. A mount
// over a recorded directory changes its device and inode. Any difference, or a path gone,
// falls back to the full walk.
type treeIndex struct {
	path   string
	now    func() time.Time
	margin time.Duration

	once    sync.Once
	mu      sync.Mutex
	trees   map[string]treeRecord // by treeKey
	used    map[string]bool       // looked up or recorded in this run
	changed bool
}

type treeRecord struct {
	Stats  string   `json:"stats"`  // sha256 of the root's and the entries' lstat records (treeStats)
	Paths  []string `json:"paths"`  // the entries, relative to the root, in the order of the stream
	DiffID v1.Hash  `json:"diffID"` // of the tar stream those entries made
	Size   int64    `json:"size"`   // of that stream
}

type treeIndexFile struct {
	Version int                   `json:"version"`
	Trees   map[string]treeRecord `json:"trees"`
}

const (
	treeIndexVersion = 2 // 2: the root's own lstat in Stats, and Paths
	// racyMargin is how much older than the walk every entry's ctime and mtime must be for a
	// tree to be recorded: far more than any kernel's timestamp granularity.
	racyMargin = 2 * time.Second
)

// newTreeIndex returns the index kept in the file at path; "" keeps none (every tree is read).
func newTreeIndex(path string) *treeIndex {
	if path == "" {
		return nil
	}
	return &treeIndex{path: path, now: time.Now, margin: racyMargin}
}

func treeKey(root string, epoch time.Time) string {
	return root + "\x00" + strconv.FormatInt(epoch.Unix(), 10)
}

// load reads the file once; a missing or unreadable one is an empty index (a cache, rewritten).
func (x *treeIndex) load() {
	x.once.Do(func() {
		x.trees, x.used = map[string]treeRecord{}, map[string]bool{}
		data, err := os.ReadFile(x.path)
		if err != nil {
			return
		}
		var f treeIndexFile
		if json.Unmarshal(data, &f) == nil && f.Version == treeIndexVersion && f.Trees != nil {
			x.trees = f.Trees
		}
	})
}

// rootfsLayer is the layer of the tree at root, read through open (rootfsTar): its DiffID from
// the index when every entry is as recorded, else from a hashing pass, recorded when the tree
// is settled.
func (x *treeIndex) rootfsLayer(ctx context.Context, what, root string, open func() (*os.Root, error), epoch time.Time) (*lazyLayer, []string, error) {
	src := rootfsTar(root, open, epoch)
	if x == nil {
		return newLazyLayer(ctx, what, src)
	}
	x.load()
	key := treeKey(root, epoch)
	x.mu.Lock()
	rec, ok := x.trees[key]
	x.used[key] = true
	x.mu.Unlock()
	if ok && recordedStats(root, rec.Paths) == rec.Stats {
		return &lazyLayer{what: what, src: src, diffID: rec.DiffID, tarSize: rec.Size}, nil, nil
	}
	stats, paths, settled, serr := treeStats(root, x.now().Add(-x.margin))
	l, warnings, err := newLazyLayer(ctx, what, src)
	x.mu.Lock()
	defer x.mu.Unlock()
	switch {
	case err == nil && serr == nil && settled && len(warnings) == 0:
		x.trees[key] = treeRecord{Stats: stats, Paths: paths, DiffID: l.diffID, Size: l.tarSize}
		x.changed = true
	case ok:
		delete(x.trees, key)
		x.changed = true
	}
	return l, warnings, err
}

// save writes the trees of this run (a tree not built in it is dropped) when anything changed;
// a rename makes it whole for a concurrent run, which at worst loses the other's records.
func (x *treeIndex) save() error {
	if x == nil {
		return nil
	}
	x.load()
	x.mu.Lock()
	defer x.mu.Unlock()
	for k := range x.trees {
		if !x.used[k] {
			delete(x.trees, k)
			x.changed = true
		}
	}
	if !x.changed {
		return nil
	}
	data, err := json.Marshal(treeIndexFile{Version: treeIndexVersion, Trees: x.trees})
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(x.path), 0o700); err != nil {
		return fmt.Errorf("rootfs index %s: %w", x.path, err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(x.path), filepath.Base(x.path)+".*")
	if err != nil {
		return fmt.Errorf("rootfs index %s: %w", x.path, err)
	}
	_, err = tmp.Write(data)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), x.path)
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("rootfs index %s: %w", x.path, err)
	}
	x.changed = false
	return nil
}

// walkDir lists the directories of a tree; a test counts its calls.
var walkDir = filepath.WalkDir

// errUnsettled stops a walk that met an entry too recent, or of a kind, that is not recorded.
var errUnsettled = errors.New("unsettled")

// treeStats digests what lstat says of root and of every entry under it, in the order of the
// tar stream, and returns the entries' paths in that order. settled is false when an entry
// changed at or after cutoff, or is one the stream skips with a warning (a socket, a device):
// such a tree is always read.
func treeStats(root string, cutoff time.Time) (sum string, paths []string, settled bool, err error) {
	h := sha256.New()
	c := cutoff.UnixNano()
	err = walkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		rel := "."
		if p != root {
			rel, _ = filepath.Rel(root, p)
			paths = append(paths, rel)
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		m := fi.Mode()
		if !ok || !(m.IsDir() || m.IsRegular() || m&(fs.ModeSymlink|fs.ModeNamedPipe) != 0) {
			return errUnsettled
		}
		if rel == "." && !m.IsDir() {
			// The root was resolved (Build), but may have been swapped for a link since: the
			// stream would read through it, this walk would see the link alone.
			return errUnsettled
		}
		mtime, ctime := st.Mtim.Nano(), st.Ctim.Nano()
		if mtime >= c || ctime >= c {
			return errUnsettled
		}
		writeStat(h, rel, uint32(m), fi.Size(), uint64(st.Dev), st.Ino, uint64(st.Nlink), mtime, ctime)
		return nil
	})
	if errors.Is(err, errUnsettled) {
		return "", nil, false, nil
	}
	if err != nil {
		return "", nil, false, err
	}
	return hashOf(h).Hex, paths, true, nil
}

// recordedStats is treeStats's sum over root and the recorded paths, by one lstat each and no
// directory listed; "" when any of them cannot be read. Only a sum equal to the recorded one
// means anything: the directories' lstat records in it vouch for their entries (treeIndex).
func recordedStats(root string, paths []string) string {
	h := sha256.New()
	for i := -1; i < len(paths); i++ {
		rel, p := ".", root
		if i >= 0 {
			rel, p = paths[i], filepath.Join(root, paths[i])
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return ""
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok {
			return ""
		}
		writeStat(h, rel, uint32(fi.Mode()), fi.Size(), uint64(st.Dev), st.Ino, uint64(st.Nlink), st.Mtim.Nano(), st.Ctim.Nano())
	}
	return hashOf(h).Hex
}

func writeStat(h hash.Hash, rel string, mode uint32, size int64, dev, ino, nlink uint64, mtime, ctime int64) {
	var b [8 * 7]byte
	binary.LittleEndian.PutUint64(b[0:], uint64(len(rel)))
	binary.LittleEndian.PutUint64(b[8:], uint64(mode))
	binary.LittleEndian.PutUint64(b[16:], uint64(size))
	binary.LittleEndian.PutUint64(b[24:], dev)
	binary.LittleEndian.PutUint64(b[32:], ino)
	binary.LittleEndian.PutUint64(b[40:], nlink)
	binary.LittleEndian.PutUint64(b[48:], uint64(mtime))
	h.Write(b[:])
	binary.LittleEndian.PutUint64(b[0:], uint64(ctime))
	h.Write(b[:8])
	h.Write([]byte(rel))
}
