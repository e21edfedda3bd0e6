package state

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"slipway.dev/slipway/internal/kube"
)

// The Kubernetes backend's lock: a Lease per group, renewed while held, taken over when it
// expired (a holder killed without unlocking).

func (b *kubeBackend) leaseSeconds() int32 {
	s := int32(b.o.leaseDuration / time.Second)
	return max(s, 1)
}

func leaseExpiry(l *kube.StateLease) time.Time {
	t := l.RenewTime
	if t.IsZero() {
		t = l.AcquireTime
	}
	return t.Add(time.Duration(max(l.DurationSeconds, 1)) * time.Second)
}

// holderOf decodes the lock info a Lease carries, falling back to its holder identity.
func holderOf(l *kube.StateLease) Info {
	var info Info
	if v := l.Annotations[annoLockInfo]; v != "" && json.Unmarshal([]byte(v), &info) == nil && info.ID == l.Holder {
		info.Expires = leaseExpiry(l)
		return info
	}
	return Info{ID: l.Holder, Who: "unknown (lease holder " + l.Holder + ")", Created: l.AcquireTime, Expires: leaseExpiry(l)}
}

func (b *kubeBackend) Lock(ctx context.Context, info Info) (string, error) {
	info, infoJSON, err := lockJSON(b.group, b.Location(), info)
	if err != nil {
		return "", err
	}
	for range conflictRetries {
		now := time.Now()
		want := &kube.StateLease{Name: b.leaseName(), Labels: b.labels(),
			Annotations: map[string]string{annoLockInfo: string(infoJSON)},
			Holder:      info.ID, DurationSeconds: b.leaseSeconds(), AcquireTime: now, RenewTime: now}
		cur, err := b.leases.Get(ctx, b.leaseName())
		var prev *Info
		switch {
		case errors.Is(err, kube.ErrObjectNotFound):
			if err := b.kube.EnsureNamespace(ctx, b.ns, b.namespaceLabels()); err != nil {
				return "", fmt.Errorf("state %s: lock: %w", b.group, err)
			}
			cur, err = b.leases.Create(ctx, want)
		case err != nil:
			return "", fmt.Errorf("state %s: lock: %w", b.group, err)
		case cur.Holder != "" && now.Before(leaseExpiry(cur)):
			return "", &LockError{Group: b.group, Holder: holderOf(cur)}
		default: // free, or expired: take it, at the version we judged
			if cur.Holder != "" {
				h := holderOf(cur)
				prev = &h
			}
			want.ResourceVersion = cur.ResourceVersion
			cur, err = b.leases.Update(ctx, want)
		}
		if errors.Is(err, kube.ErrObjectConflict) {
			continue // someone else moved first: look again
		}
		if err != nil {
			return "", fmt.Errorf("state %s: lock: %w", b.group, err)
		}
		if prev != nil {
			b.o.notify(Notice{Kind: NoticeTakeover, Group: b.group, Previous: prev,
				Message: fmt.Sprintf("state %s: took over the lock of %s: its lease expired at %s without renewal (the holder stopped or lost the cluster)",
					b.group, prev, prev.Expires.UTC().Format(time.RFC3339))})
		}
		b.startRenewal(info.ID, cur)
		return info.ID, nil
	}
	return "", fmt.Errorf("state %s: lock: lease %s/%s kept changing under %d attempts", b.group, b.ns, b.leaseName(), conflictRetries)
}

func (b *kubeBackend) startRenewal(id string, l *kube.StateLease) {
	r := &renewal{id: id, stop: make(chan struct{}), done: make(chan struct{})}
	b.hold(r)
	go b.renew(r, l)
}

// hold makes next (nil: none) the renewal this backend runs, and halts the one it ran.
func (b *kubeBackend) hold(next *renewal) {
	b.mu.Lock()
	old := b.held
	b.held = next
	b.mu.Unlock()
	if old != nil {
		old.halt()
	}
}

func (r *renewal) halt() {
	select {
	case <-r.stop:
	default:
		close(r.stop)
	}
	<-r.done
}

func (b *kubeBackend) lockLost() bool {
	b.mu.Lock()
	r := b.held
	b.mu.Unlock()
	if r == nil {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lost
}

// renew keeps the Lease of r fresh until r is halted or another run took it.
func (b *kubeBackend) renew(r *renewal, l *kube.StateLease) {
	defer close(r.done)
	period := b.o.leaseDuration / 3
	t := time.NewTicker(period)
	defer t.Stop()
	lastOK := time.Now()
	for {
		select {
		case <-r.stop:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), period)
		next, err := b.renewOnce(ctx, r.id, l)
		cancel()
		var le *LockError
		switch {
		case errors.As(err, &le):
			r.mu.Lock()
			r.lost = true
			r.mu.Unlock()
			b.o.notify(Notice{Kind: NoticeLockLost, Group: b.group, Previous: &le.Holder,
				Message: fmt.Sprintf("state %s: the lock was taken over by %s; this run's further state writes are refused", b.group, le.Holder)})
			return
		case err != nil:
			b.o.notify(Notice{Kind: NoticeRenewFailed, Group: b.group,
				Message: fmt.Sprintf("state %s: renewing the lock failed (last renewed %s ago; it expires after %s): %v",
					b.group, time.Since(lastOK).Round(time.Second), b.o.leaseDuration, err)})
		default:
			l = next
			lastOK = time.Now()
		}
	}
}

// renewOnce moves the Lease's renew time to now, or returns *LockError when it is not ours.
func (b *kubeBackend) renewOnce(ctx context.Context, id string, l *kube.StateLease) (*kube.StateLease, error) {
	for range 2 {
		upd := *l
		upd.RenewTime = time.Now()
		out, err := b.leases.Update(ctx, &upd)
		if err == nil {
			return out, nil
		}
		if !errors.Is(err, kube.ErrObjectConflict) && !errors.Is(err, kube.ErrObjectNotFound) {
			return nil, err
		}
		cur, gerr := b.leases.Get(ctx, b.leaseName())
		if errors.Is(gerr, kube.ErrObjectNotFound) {
			return nil, &LockError{Group: b.group, Holder: Info{Who: "nobody (the lease was deleted, by state unlock or destroy)"}}
		}
		if gerr != nil {
			return nil, gerr
		}
		if cur.Holder != id {
			return nil, &LockError{Group: b.group, Holder: holderOf(cur)}
		}
		l = cur
	}
	return nil, fmt.Errorf("lease %s/%s kept changing", b.ns, b.leaseName())
}

func (b *kubeBackend) LockInfo(ctx context.Context) (*Info, error) {
	cur, err := b.leases.Get(ctx, b.leaseName())
	if errors.Is(err, kube.ErrObjectNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("state %s: lock info: %w", b.group, err)
	}
	if cur.Holder == "" {
		return nil, nil
	}
	h := holderOf(cur)
	return &h, nil
}

// Forget stops renewing the lock this backend holds without releasing it. Destroy calls it
// before it deletes the namespace that holds the Lease: the lock goes with the namespace, and
// renewals meanwhile would only fail ("being terminated").
func (b *kubeBackend) Forget() { b.hold(nil) }

func (b *kubeBackend) Unlock(ctx context.Context, id string) error {
	b.mu.Lock()
	r := b.held
	if r != nil && r.id == id {
		b.held = nil
	} else {
		r = nil
	}
	b.mu.Unlock()
	if r != nil {
		r.halt()
	}
	for range conflictRetries {
		cur, err := b.leases.Get(ctx, b.leaseName())
		if errors.Is(err, kube.ErrObjectNotFound) || (err == nil && cur.Holder == "") {
			return fmt.Errorf("state %s: unlock %s: %w", b.group, id, ErrNotLocked)
		}
		if err != nil {
			return fmt.Errorf("state %s: unlock: %w", b.group, err)
		}
		if cur.Holder != id {
			return &LockIDError{Group: b.group, ID: id, Holder: holderOf(cur)}
		}
		err = b.leases.Delete(ctx, b.leaseName(), cur.ResourceVersion)
		if errors.Is(err, kube.ErrObjectConflict) {
			continue
		}
		if errors.Is(err, kube.ErrObjectNotFound) {
			return fmt.Errorf("state %s: unlock %s: %w", b.group, id, ErrNotLocked)
		}
		if err != nil {
			return fmt.Errorf("state %s: unlock: %w", b.group, err)
		}
		return nil
	}
	return fmt.Errorf("state %s: unlock: lease %s/%s kept changing under %d attempts", b.group, b.ns, b.leaseName(), conflictRetries)
}
