package state

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// fileBackend keeps a group's state in one JSON file, replaced atomically (temp file in the same
// directory, fsync, rename, fsync of the directory), and its lock in <path>.lock. The lock file
// is made complete under a temporary name and then hard-linked into place, which fails when the
// lock exists: taking it is exclusive and a reader never sees a half-written holder. A lock
// left by a killed process stays until Unlock (state unlock): nothing here guesses that a
// holder is gone. The compare-and-swap of Write runs under flock(2) on the directory, so two
// writers on one host cannot both pass the serial check.
type fileBackend struct {
	path  string
	group string
	o     options
}

func newFileBackend(path, group string, o options) *fileBackend {
	return &fileBackend{path: filepath.Clean(path), group: group, o: o}
}

func (b *fileBackend) Location() string { return "file://" + b.path }
func (b *fileBackend) lockPath() string { return b.path + ".lock" }
func (b *fileBackend) dir() string      { return filepath.Dir(b.path) }

func (b *fileBackend) Read(ctx context.Context) (*Document, error) {
	d, err := b.read()
	if err != nil {
		return nil, err
	}
	return checkGroup(b.Location(), b.group, d)
}

func (b *fileBackend) read() (*Document, error) { return readWith(b.path, Decode) }

// readHead reads the stored document's version, lineage and serial; nil when none.
func (b *fileBackend) readHead() (*head, error) { return readWith(b.path, decodeHeadChecked) }

// readWith decodes the file at path with decode; nil when there is no such file.
func readWith[T any](path string, decode func(path string, data []byte) (*T, error)) (*T, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("state %s: read: %w", path, err)
	}
	return decode(path, data)
}

func (b *fileBackend) Write(ctx context.Context, d *Document) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("state %s: write: %w", b.path, err)
	}
	unlock, err := b.lockDir()
	if err != nil {
		return err
	}
	defer unlock()
	stored, err := b.readHead()
	if err != nil {
		return err
	}
	next, data, err := checkWrite(b.group, stored, d, Encode)
	if err != nil {
		return err
	}
	if err := b.replace(b.path, data); err != nil {
		return fmt.Errorf("state %s: write: %w", b.path, err)
	}
	commit(d, next)
	return nil
}

func (b *fileBackend) Delete(ctx context.Context) error {
	unlock, err := b.lockDir()
	if err != nil {
		return err
	}
	defer unlock()
	if err := os.Remove(b.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("state %s: delete: %w", b.path, err)
	}
	return syncDir(b.dir())
}

// lockDir makes the directory and holds flock(2) on it for one read-compare-replace.
func (b *fileBackend) lockDir() (func(), error) {
	if err := os.MkdirAll(b.dir(), 0o700); err != nil {
		return nil, fmt.Errorf("state %s: %w", b.path, err)
	}
	unlock, err := flockDir(b.dir())
	if err != nil {
		return nil, fmt.Errorf("state %s: lock directory: %w", b.path, err)
	}
	return unlock, nil
}

// replace writes data to a temp file next to path, syncs it and renames it over path.
func (b *fileBackend) replace(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	ok := false
	defer func() {
		if !ok {
			_ = os.Remove(tmp)
		}
	}()
	if _, err := f.Write(data); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Chmod(0o600); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	ok = true
	return syncDir(filepath.Dir(path))
}

func (b *fileBackend) Lock(ctx context.Context, info Info) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", fmt.Errorf("state %s: lock: %w", b.path, err)
	}
	info = info.at(b.Location())
	if err := os.MkdirAll(b.dir(), 0o700); err != nil {
		return "", fmt.Errorf("state %s: lock: %w", b.path, err)
	}
	data, err := json.MarshalIndent(info, "", "  ")
	if err != nil {
		return "", fmt.Errorf("state %s: lock: %w", b.path, err)
	}
	f, err := os.CreateTemp(b.dir(), "."+filepath.Base(b.lockPath())+".tmp-*")
	if err != nil {
		return "", fmt.Errorf("state %s: lock: %w", b.path, err)
	}
	tmp := f.Name()
	defer func() { _ = os.Remove(tmp) }()
	_, werr := f.Write(append(data, '\n'))
	if werr == nil {
		werr = f.Sync()
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return "", fmt.Errorf("state %s: lock: %w", b.path, werr)
	}
	if err := os.Link(tmp, b.lockPath()); err != nil {
		if errors.Is(err, fs.ErrExist) {
			holder, herr := b.LockInfo(ctx)
			if herr != nil {
				return "", herr
			}
			if holder == nil { // released between the link and the read: report, let the caller retry
				holder = &Info{Who: "a run that has just released it"}
			}
			return "", &LockError{Group: b.group, Holder: *holder}
		}
		return "", fmt.Errorf("state %s: lock: %w", b.path, err)
	}
	if err := syncDir(b.dir()); err != nil {
		return "", fmt.Errorf("state %s: lock: %w", b.path, err)
	}
	return info.ID, nil
}

func (b *fileBackend) LockInfo(ctx context.Context) (*Info, error) {
	data, err := os.ReadFile(b.lockPath())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("state %s: read lock: %w", b.path, err)
	}
	var info Info
	if err := json.Unmarshal(data, &info); err != nil {
		// Not ours or damaged: still a lock; show what can be shown.
		return &Info{Who: "unknown (unreadable lock file " + b.lockPath() + ")"}, nil
	}
	return &info, nil
}

func (b *fileBackend) Unlock(ctx context.Context, id string) error {
	holder, err := b.LockInfo(ctx)
	if err != nil {
		return err
	}
	if holder == nil {
		return fmt.Errorf("state %s: unlock %s: %w", b.group, id, ErrNotLocked)
	}
	if holder.ID != id {
		return &LockIDError{Group: b.group, ID: id, Holder: *holder}
	}
	if err := os.Remove(b.lockPath()); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("state %s: unlock %s: %w", b.group, id, ErrNotLocked)
		}
		return fmt.Errorf("state %s: unlock: %w", b.path, err)
	}
	return syncDir(b.dir())
}

// List returns the groups whose state files are in the backend's directory.
func (b *fileBackend) List(ctx context.Context) ([]string, error) {
	dir := b.dir()
	if b.group == "" && !strings.HasSuffix(b.path, ".json") {
		dir = b.path // opened without a group on a directory: list it
	}
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("state directory %s: %w", dir, err)
	}
	var out []string
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() || strings.HasPrefix(n, ".") || !strings.HasSuffix(n, ".json") {
			continue
		}
		out = append(out, strings.TrimSuffix(n, ".json"))
	}
	sort.Strings(out)
	return out, nil
}

func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Sync(); err != nil && !errors.Is(err, os.ErrInvalid) {
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	return nil
}
