// Package sidecar is slipway's secrets sidecar (FR-004e), the program of cmd/slipway-secrets:
// it logs in to an OpenBao (or Vault) server with the pod's projected ServiceAccount token,
// reads KV v2 secrets, writes each configured file into the pod's memory volume atomically and
// read-only, and stops the service when a file marked `restart` gets a new value. `check` is
// its startup probe: it passes once every file exists, so the service starts only then.
//
// It never prints a value: its log names files, mounts, paths and keys.
package sidecar

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"syscall"
	"time"

	"slipway.dev/slipway/internal/secretsconf"
)

// Sidecar runs one configuration.
type Sidecar struct {
	Cfg  *secretsconf.Config
	Log  io.Writer
	Proc string // the proc tree of the PID namespace; "" is /proc
	pid  int    // the sidecar's PID in it; 0 is its own (a test's stand-in tree sets it)
	kill func(pid int, sig syscall.Signal) error
}

// Check reports the files of cfg that are not in its directory yet.
func Check(cfg *secretsconf.Config) []string {
	var missing []string
	for _, f := range cfg.Files {
		if !exists(cfg.Dir, f.Name) {
			missing = append(missing, f.Name)
		}
	}
	return missing
}

func (s *Sidecar) logf(format string, args ...any) {
	fmt.Fprintf(s.Log, "slipway-secrets: "+format+"\n", args...)
}

// Run writes the files, then reads them again every poll interval until ctx ends. Until every
// file is written once, an error ends Run (the container restarts, with Kubernetes' backoff,
// and the rollout sees why in its log); after that an error is logged and the next round
// tries again, the service keeping the files it has.
func (s *Sidecar) Run(ctx context.Context) error {
	srv, err := newServer(ctx, s.Cfg)
	if err != nil {
		return err
	}
	poll := time.Duration(s.Cfg.PollSeconds) * time.Second
	started := false
	for {
		err := s.Round(ctx, srv)
		switch {
		case err == nil && !started:
			started = true
			s.logf("all %d files written", len(s.Cfg.Files))
		case err != nil && !started:
			return err
		case err != nil:
			s.logf("%v (the files stay as they are; next try in %s)", err, poll)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(poll):
		}
	}
}

// Round reads every secret once, writes the files whose bytes changed, and stops the service
// when a `restart` file changed. A file missing before the round is a first write, not a
// change; a file found on the volume with other bytes is a change, also one made while the
// sidecar was down. The restart mark makes a stop survive a sidecar that dies before sending
// it.
func (s *Sidecar) Round(ctx context.Context, srv *server) error {
	if err := srv.refresh(ctx); err != nil {
		return err
	}
	data := map[[3]string]map[string]any{} // one read per engine, mount and path
	restart := exists(s.Cfg.Dir, pendingRestart)
	var errs []error
	for _, f := range s.Cfg.Files {
		at := [3]string{f.Engine, f.Mount, f.Path}
		d, ok := data[at]
		if !ok {
			var err error
			if d, err = srv.source(ctx, f); err != nil {
				errs = append(errs, fmt.Errorf("file %s: %w", f.Name, err))
				continue
			}
			data[at] = d
		}
		changed, err := s.update(f, d)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if changed && f.Restart && !restart {
			restart = true
			if err := markPending(s.Cfg.Dir, true); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if restart {
		if err := s.restart(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// update writes f when its bytes differ from the volume's; changed is true when it replaced
// other bytes (not a first write).
func (s *Sidecar) update(f secretsconf.File, data map[string]any) (changed bool, err error) {
	b, err := content(f, data)
	if err != nil {
		return false, err
	}
	eq, err := same(s.Cfg.Dir, f.Name, b)
	if err != nil || eq {
		return false, err
	}
	had := exists(s.Cfg.Dir, f.Name)
	if err := writeAtomic(s.Cfg.Dir, f.Name, b); err != nil {
		return false, err
	}
	what := "wrote"
	if had {
		what = "rewrote"
	}
	s.logf("%s %s (%s/%s %s)", what, f.Name, f.Mount, f.Path, source(f))
	return had, nil
}

func source(f secretsconf.File) string {
	if f.Template != "" {
		return "template"
	}
	if f.Variable != "" {
		return "key " + f.Key + " variable " + f.Variable
	}
	return "key " + f.Key
}

// restart stops the service and clears the mark. No process to stop is no error: the service
// has not started yet, and it will read the new files when it does.
func (s *Sidecar) restart() error {
	kill := s.kill
	if kill == nil {
		kill = func(pid int, sig syscall.Signal) error { return syscall.Kill(pid, sig) }
	}
	p := procs{root: cmp.Or(s.Proc, "/proc"), self: cmp.Or(s.pid, os.Getpid()), kill: kill}
	pids, err := p.stop(s.Cfg.ServiceContainer)
	if err != nil {
		return fmt.Errorf("restart of container %s: %w", s.Cfg.ServiceContainer, err)
	}
	if len(pids) == 0 {
		s.logf("a restart secret changed; no process of container %s runs yet", s.Cfg.ServiceContainer)
	} else {
		slices.Sort(pids)
		s.logf("a restart secret changed: stopped the service (container %s, pids %v)", s.Cfg.ServiceContainer, pids)
	}
	return markPending(s.Cfg.Dir, false)
}
