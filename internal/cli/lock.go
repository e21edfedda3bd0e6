package cli

// Lock handling of the changing verbs (apply, destroy, suspend, resume; SPEC §8): take the
// group's lock or say who holds it (exit code 3), optionally wait for it, and on SIGINT/SIGTERM
// let the current step finish and the state be written before unlocking; a second signal exits
// at once and leaves the lock for `state unlock`.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"slipway.dev/slipway/internal/quote"
	"slipway.dev/slipway/internal/state"
)

func init() {
	exitClassifiers = append(exitClassifiers, func(err error) (int, bool) {
		var le *state.LockError
		if errors.As(err, &le) {
			return ExitLocked, true
		}
		return 0, false
	})
}

// lockStderr is where lock handling reports (waiting, interrupts, takeovers); a variable for tests.
var lockStderr io.Writer = os.Stderr

// exitNow ends the process on a second signal; a variable for tests.
var exitNow = os.Exit

// unlockTimeout bounds the unlock after fn returns, which runs even when ctx was cancelled.
const unlockTimeout = 30 * time.Second

// addLockTimeoutFlag adds --lock-timeout to a changing verb.
func addLockTimeoutFlag(f *pflag.FlagSet, d *time.Duration) {
	f.DurationVar(d, "lock-timeout", 0, "wait this long for the group's lock when another run holds it (default: fail at once, exit code 3)")
}

// openState opens the state backend of group (SPEC §2: --state > SLIPWAY_STATE > file), with
// a cluster connection only for kubernetes:// URLs. Backend notices (a lock taken over) are
// printed on stderr.
func openState(ctx context.Context, g *Globals, group string, stderr io.Writer, opts ...state.Option) (state.Backend, error) {
	url := g.StateURL(group)
	if g.StateTimeout < 0 {
		return nil, fmt.Errorf("--state-timeout %s: want a duration of 0 (no limit) or more", g.StateTimeout)
	}
	var kc state.KubeAccess
	if isKubeURL(url) {
		c, err := openKube(ctx, g)
		if err != nil {
			return nil, err
		}
		kc = c
	}
	opts = append([]state.Option{state.WithRequestTimeout(g.StateTimeout), state.WithNotify(func(n state.Notice) {
		if n.Kind == state.NoticeWaiting {
			fmt.Fprintln(stderr, quote.Line(n.Message)) // it may carry a state server's words
			return
		}
		fmt.Fprintln(stderr, "warning:", quote.Line(n.Message))
	})}, opts...)
	return state.Open(ctx, url, group, kc, opts...)
}

func isKubeURL(url string) bool {
	u := strings.ToLower(url)
	return strings.HasPrefix(u, "kubernetes://") || strings.HasPrefix(u, "k8s://")
}

// withLock runs fn holding the group's lock of backend for operation.
//
// A lock held by another run fails at once with its *state.LockError (exit code 3), or, with
// lockTimeout > 0, is retried with backoff until then. The first SIGINT or SIGTERM cancels the
// ctx fn gets: fn is expected to finish its current step and write the state with a context that
// outlives the cancellation (context.WithoutCancel); then the lock is released and withLock
// returns fn's error. A second signal exits at once with code 130 and leaves the lock, naming it.
func withLock(ctx context.Context, g *Globals, backend state.Backend, operation string, lockTimeout time.Duration, fn func(ctx context.Context) error) error {
	info := state.NewInfo(operation)
	info.Path = backend.Location()
	if g != nil && g.File != "" {
		info.Info += ", file " + g.File
	}
	id, err := lockWait(ctx, backend, info, lockTimeout, lockStderr)
	if err != nil {
		return err
	}

	// main's own signal.NotifyContext sees the same signals and cancels ctx on the first: that
	// is the same cancellation, and the run's context follows it.
	got, ferr := interruptible(ctx, func(s os.Signal) string {
		return fmt.Sprintf("%s: finishing the current step, writing the state and unlocking; %s again to stop at once (the lock then stays)", s, s)
	}, func(s os.Signal) string {
		return fmt.Sprintf("%s again: stopping now; the lock of %s stays: remove it with `slipway state unlock %s` once no run uses it", s, backend.Location(), id)
	}, fn)
	if got != nil && ferr != nil && errors.Is(ferr, context.Canceled) {
		ferr = fmt.Errorf("%s %s, stopped after the current step: %w", operation, signalName(got), ferr)
	}
	uctx, ucancel := context.WithTimeout(context.WithoutCancel(ctx), unlockTimeout)
	defer ucancel()
	if uerr := backend.Unlock(uctx, id); uerr != nil {
		uerr = fmt.Errorf("unlock (remove it with `slipway state unlock %s`): %w", id, uerr)
		if ferr == nil {
			return uerr
		}
		return errors.Join(ferr, uerr)
	}
	return ferr
}

// interruptible runs fn with a context the first SIGINT or SIGTERM cancels, after printing
// first(signal) on lockStderr: fn is expected to finish its current step and write its state.
// A second signal prints second(signal) and exits at once with code 130, leaving the locks
// (second names them). It returns the first signal, nil when none came, and fn's error. The
// one guard of withLock and of a waves run.
func interruptible(ctx context.Context, first, second func(os.Signal) string, fn func(ctx context.Context) error) (os.Signal, error) {
	// Registered before fn starts, so that no signal between here and fn is lost.
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	watcherDone := make(chan struct{})
	var got os.Signal // written by the watcher, read after watcherDone
	go func() {
		defer close(watcherDone)
		for {
			select {
			case <-done:
				return
			case s := <-sigs:
				if got == nil {
					got = s
					fmt.Fprintln(lockStderr, first(s))
					cancel()
					continue
				}
				fmt.Fprintln(lockStderr, second(s))
				exitNow(130)
				return
			}
		}
	}()
	err := fn(runCtx)
	close(done)
	<-watcherDone
	signal.Stop(sigs)
	cancel()
	return got, err
}

// lockWait takes the lock, retrying with backoff (0.5 s doubling to 5 s, with jitter) while
// another run holds it and the timeout has not passed.
func lockWait(ctx context.Context, backend state.Locker, info state.Info, timeout time.Duration, stderr io.Writer) (string, error) {
	deadline := time.Now().Add(timeout)
	wait := 500 * time.Millisecond
	said := ""
	for {
		id, err := backend.Lock(ctx, info)
		if err == nil {
			return id, nil
		}
		var le *state.LockError
		if !errors.As(err, &le) || timeout <= 0 {
			return "", err
		}
		left := time.Until(deadline)
		if left <= 0 {
			return "", fmt.Errorf("waited %s for the lock: %w", timeout, err)
		}
		if le.Holder.ID != said {
			fmt.Fprintf(stderr, "%v; waiting up to %s\n", err, left.Round(time.Second))
			said = le.Holder.ID
		}
		sleep := min(wait+time.Duration(rand.Int64N(int64(wait/4)+1)), left)
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("waiting for the lock: %w (%w)", ctx.Err(), err)
		case <-time.After(sleep):
		}
		wait = min(2*wait, 5*time.Second)
	}
}

func signalName(s os.Signal) string {
	switch s {
	case os.Interrupt:
		return "interrupted (SIGINT)"
	case syscall.SIGTERM:
		return "terminated (SIGTERM)"
	}
	return "stopped by " + s.String()
}
