package state

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"slipway.dev/slipway/internal/redact"
)

// Store reads, writes and deletes one group's state.
type Store interface {
	// Read returns the stored document, or nil, nil when there is none.
	Read(ctx context.Context) (*Document, error)
	// Write stores d if d.Serial is the stored serial and d.Lineage the stored lineage (or d is
	// new: lineage ""). On success d has the written serial, lineage, group and version; a
	// stale or foreign document is refused with *ConflictError and d is left as it was.
	Write(ctx context.Context, d *Document) error
	// Delete removes the stored document; none is not an error.
	Delete(ctx context.Context) error
}

// Locker holds one group's lock.
type Locker interface {
	// Lock takes the lock for info (info.ID is made when empty) and returns its ID; a lock
	// held by another is refused with *LockError naming the holder.
	Lock(ctx context.Context, info Info) (string, error)
	// Unlock releases the lock with ID id, whoever took it (state unlock). Another ID is
	// refused with *LockIDError; no lock at all wraps ErrNotLocked.
	Unlock(ctx context.Context, id string) error
	// LockInfo returns the current lock, or nil, nil when the group is not locked.
	LockInfo(ctx context.Context) (*Info, error)
}

// Lister is implemented by backends that can list the groups they hold.
type Lister interface {
	List(ctx context.Context) ([]string, error)
}

// Backend is a Store and a Locker for one group at one location.
type Backend interface {
	Store
	Locker
	// Location is the state's URL, without credentials, for messages.
	Location() string
}

// Option configures Open.
type Option func(*options)

type options struct {
	notify        func(Notice)
	leaseDuration time.Duration
	getenv        func(string) string
	retryWaitMin  time.Duration
	retryWaitMax  time.Duration
	// requestTimeout bounds one request to an http backend (0: none); slowAfter is when a
	// request still unanswered is reported as waiting (NoticeWaiting).
	requestTimeout time.Duration
	slowAfter      time.Duration
}

// WithNotify sends the backend's notices (a lock taken over, a lease lost) to f. f may be
// called from another goroutine.
func WithNotify(f func(Notice)) Option { return func(o *options) { o.notify = f } }

// WithLeaseDuration sets how long a kubernetes Lease holds without renewal (default 30s); the
// holder renews it every third of that.
func WithLeaseDuration(d time.Duration) Option { return func(o *options) { o.leaseDuration = d } }

// WithGetenv replaces os.Getenv for the SLIPWAY_HTTP_* settings (tests).
func WithGetenv(f func(string) string) Option { return func(o *options) { o.getenv = f } }

// WithRequestTimeout bounds each request to an http backend (--state-timeout); 0 means no
// bound. The default is DefaultRequestTimeout.
func WithRequestTimeout(d time.Duration) Option { return func(o *options) { o.requestTimeout = d } }

// WithSlowAfter sets how long a request to an http backend may go unanswered before a
// NoticeWaiting says so (default DefaultSlowAfter).
func WithSlowAfter(d time.Duration) Option { return func(o *options) { o.slowAfter = d } }

// DefaultRequestTimeout bounds one request to an http backend unless WithRequestTimeout says
// otherwise.
const DefaultRequestTimeout = 30 * time.Second

// DefaultSlowAfter is when an unanswered request to an http backend is reported.
const DefaultSlowAfter = 3 * time.Second

// DefaultLeaseDuration is the kubernetes lock's lease duration.
const DefaultLeaseDuration = 30 * time.Second

// DefaultPath is the file backend's default location of a group's state.
func DefaultPath(group string) string { return filepath.Join(".slipway", "state", group+".json") }

// Open returns the backend of url for group. group may be "" for a backend used only to list.
// kube is needed only for kubernetes:// URLs.
func Open(ctx context.Context, rawURL, group string, kube KubeAccess, opts ...Option) (Backend, error) {
	b, err := open(rawURL, group, kube, opts...)
	if err != nil || group != "" {
		return b, err
	}
	return withoutGroup(b), nil
}

func open(rawURL, group string, kube KubeAccess, opts ...Option) (Backend, error) {
	o := options{leaseDuration: DefaultLeaseDuration, getenv: os.Getenv,
		retryWaitMin: time.Second, retryWaitMax: 30 * time.Second,
		requestTimeout: DefaultRequestTimeout, slowAfter: DefaultSlowAfter}
	for _, f := range opts {
		f(&o)
	}
	if o.notify == nil {
		o.notify = func(Notice) {}
	}
	scheme, rest, ok := strings.Cut(rawURL, "://")
	if !ok {
		return nil, fmt.Errorf("state URL %q: no scheme: want file://PATH, kubernetes://NAMESPACE or http(s)://…", redactURL(rawURL))
	}
	switch strings.ToLower(scheme) {
	case "file":
		// file://PATH is taken literally (file://.slipway/x.json is relative to the working
		// directory, file:///abs absolute), not as a URL with a host.
		if rest == "" {
			if group == "" {
				rest = filepath.Dir(DefaultPath("x"))
			} else {
				rest = DefaultPath(group)
			}
		}
		return newFileBackend(rest, group, o), nil
	case "kubernetes", "k8s":
		ns := strings.Trim(rest, "/")
		if ns == "" {
			return nil, fmt.Errorf("state URL %q: no namespace: want kubernetes://NAMESPACE", redactURL(rawURL))
		}
		if kube == nil {
			return nil, fmt.Errorf("state URL %q: the kubernetes backend needs a cluster connection", redactURL(rawURL))
		}
		return newKubeBackend(ns, group, kube, o), nil
	case "http", "https":
		u, err := url.Parse(rawURL)
		if err != nil {
			redact.URLErrors(err, nil) // url.Parse's error quotes the URL whole
			return nil, fmt.Errorf("state URL %q: %w", redactURL(rawURL), err)
		}
		return newHTTPBackend(u, group, o)
	}
	return nil, fmt.Errorf("state URL %q: unknown scheme %q: want file, kubernetes, http or https", redactURL(rawURL), scheme)
}

// redactURL hides a password and the query values (a token) of a URL given as a string that
// may not parse.
func redactURL(s string) string { return redact.URL(s, nil) }
