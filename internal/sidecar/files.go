package sidecar

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"slipway.dev/slipway/internal/secretsconf"
)

// fileMode is the mode of every file the sidecar writes: readable by the service whatever its
// user, writable by nobody (the volume is mounted read-only there anyway).
const fileMode = 0o444

// pendingRestart is the sidecar's own mark, in the volume, that a `restart` file changed and
// the service has not been stopped yet: a sidecar that dies between the write and the signal
// finds it when it starts again (the volume lives as long as the pod).
const pendingRestart = ".restart-pending"

// same reports whether the file name in dir holds exactly b.
func same(dir, name string, b []byte) (bool, error) {
	old, err := os.ReadFile(filepath.Join(dir, name))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("file %s: %w", name, err)
	}
	return bytes.Equal(old, b), nil
}

// exists reports whether name is in dir.
func exists(dir, name string) bool {
	_, err := os.Lstat(filepath.Join(dir, name))
	return err == nil
}

// writeAtomic replaces dir/name with b: a reader sees the old bytes or the new ones, never a
// part. The temporary file is hidden (a dot name, which no secret file may have).
func writeAtomic(dir, name string, b []byte) error {
	tmp, err := os.CreateTemp(dir, secretsconf.TempPattern(name))
	if err != nil {
		return fmt.Errorf("file %s: %w", name, err)
	}
	done := false
	defer func() {
		if !done {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if _, err := tmp.Write(b); err != nil {
		return fmt.Errorf("file %s: write: %w", name, err)
	}
	if err := tmp.Chmod(fileMode); err != nil {
		return fmt.Errorf("file %s: chmod: %w", name, err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("file %s: sync: %w", name, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("file %s: close: %w", name, err)
	}
	if err := os.Rename(tmp.Name(), filepath.Join(dir, name)); err != nil {
		return fmt.Errorf("file %s: rename: %w", name, err)
	}
	done = true
	return nil
}

// markPending records (or clears) that the service must be stopped.
func markPending(dir string, pending bool) error {
	p := filepath.Join(dir, pendingRestart)
	if !pending {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("restart mark: %w", err)
		}
		return nil
	}
	if err := os.WriteFile(p, nil, 0o400); err != nil {
		return fmt.Errorf("restart mark: %w", err)
	}
	return nil
}
