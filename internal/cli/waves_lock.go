package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"slipway.dev/slipway/internal/state"
)

// lock takes the locks of units in lockOrder, waiting up to timeout for each as withLock does.
// On an error the locks taken are released and the error names the group whose lock is held.
func (r *wavesRun) lock(ctx context.Context, op string, timeout time.Duration, units []*waveUnit) error {
	for _, u := range lockOrder(units) {
		info := state.NewInfo(op)
		info.Path = u.s.backend.Location()
		info.Info += fmt.Sprintf(", waves file %s, group %s", r.file.Path, u.w.Name)
		id, err := lockWait(ctx, u.s.backend, info, timeout, lockStderr)
		if err != nil {
			return errors.Join(fmt.Errorf("group %s: %w", u.w.Name, err), r.unlockAll())
		}
		r.mu.Lock()
		u.lockID = id
		r.mu.Unlock()
	}
	return nil
}

// lockOrder is the one order every run takes its groups' locks in: by the deployment's
// identity (Group.Name, what the state and its lock are keyed by), then by the state's
// location. Not the file's order, nor its dependency order: two waves files listing the same
// groups in other orders took them in opposite orders, each held the lock the other waited
// for, and both failed (issue 46 item 7). In one global order a run waits only for a lock
// ordered after every lock it holds, so no two runs can wait on each other.
func lockOrder(units []*waveUnit) []*waveUnit {
	out := slices.Clone(units)
	slices.SortStableFunc(out, func(a, b *waveUnit) int {
		return cmp.Or(strings.Compare(a.s.group.Name, b.s.group.Name), strings.Compare(a.s.backend.Location(), b.s.backend.Location()))
	})
	return out
}

// unlock releases u's lock when held, even after ctx was cancelled.
func (r *wavesRun) unlock(u *waveUnit) error {
	r.mu.Lock()
	id := u.lockID
	u.lockID = ""
	r.mu.Unlock()
	if id == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), unlockTimeout)
	defer cancel()
	if err := u.s.backend.Unlock(ctx, id); err != nil {
		return fmt.Errorf("group %s: unlock (remove it with `slipway state unlock %s`): %w", u.w.Name, id, err)
	}
	return nil
}

// unlockAll releases every lock the run holds.
func (r *wavesRun) unlockAll() error {
	var errs []error
	for _, w := range r.file.Groups {
		errs = append(errs, r.unlock(r.units[w.Name]))
	}
	return errors.Join(errs...)
}

// guard runs fn with a context the first SIGINT or SIGTERM cancels (each group finishes its
// current step and writes its state); a second one exits at once, naming the locks that stay.
func (r *wavesRun) guard(ctx context.Context, fn func(ctx context.Context) error) error {
	_, err := interruptible(ctx, func(s os.Signal) string {
		return fmt.Sprintf("%s: each group finishes its current step, writes its state and unlocks; no group starts; %s again to stop at once (the locks then stay)", s, s)
	}, func(s os.Signal) string {
		return fmt.Sprintf("%s again: stopping now; the locks stay: %s", s, r.heldLocks())
	}, fn)
	return err
}

// heldLocks names each lock still held and the command that removes it.
func (r *wavesRun) heldLocks() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var held []string
	for _, w := range r.file.Groups {
		if u := r.units[w.Name]; u.lockID != "" {
			held = append(held, fmt.Sprintf("group %s: `slipway state unlock %s` (%s)", w.Name, u.lockID, u.s.backend.Location()))
		}
	}
	return strings.Join(held, "; ")
}
