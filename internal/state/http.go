package state

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"slipway.dev/slipway/internal/redact"
)

// httpBackend speaks the Terraform/OpenTofu HTTP backend protocol, so any server of it (GitLab's
// managed state among them) holds slipway's state:
//
//	GET    address             200 with the state; 404 or 204 (or an empty 200) when none
//	POST   address[?ID=lock]   store the state (the update method is configurable)
//	DELETE address             remove it
//	LOCK   lock address        body: the lock info; 200 taken; 423 or 409 held, body: the holder
//	UNLOCK unlock address      body: the lock info; 200 released
//
// The lock and unlock address and method come from SLIPWAY_HTTP_LOCK_ADDRESS,
// SLIPWAY_HTTP_UNLOCK_ADDRESS, SLIPWAY_HTTP_LOCK_METHOD and SLIPWAY_HTTP_UNLOCK_METHOD (GitLab:
// POST and DELETE on …/lock); the lock address defaults to the state address, so that slipway,
// unlike OpenTofu, always locks. Basic auth comes from SLIPWAY_HTTP_USERNAME and
// SLIPWAY_HTTP_PASSWORD (or the URL's user info); neither appears in a message. Connection errors
// and 5xx answers are retried with exponential backoff, SLIPWAY_HTTP_RETRY_MAX times (default 2).
//
// The protocol has no compare-and-swap: the serial check of Write reads, compares and then
// posts, which is safe for callers that hold the lock (the rule of this package). It has no way
// to read the lock either: LockInfo probes by locking and, when that succeeds, unlocking at once.
type httpBackend struct {
	group                     string
	addr, lockAddr, unlockAdr *url.URL
	lockMethod, unlockMethod  string
	updateMethod              string
	username, password        string
	retryMax                  int
	client                    *http.Client
	o                         options

	mu       sync.Mutex
	lockID   string // the lock this backend holds; sent as ?ID= on writes
	lockJSON []byte
}

func newHTTPBackend(u *url.URL, group string, o options) (*httpBackend, error) {
	getenv := o.getenv
	b := &httpBackend{group: group, o: o,
		lockMethod:   envOr(getenv, "SLIPWAY_HTTP_LOCK_METHOD", "LOCK"),
		unlockMethod: envOr(getenv, "SLIPWAY_HTTP_UNLOCK_METHOD", "UNLOCK"),
		updateMethod: envOr(getenv, "SLIPWAY_HTTP_UPDATE_METHOD", http.MethodPost),
		username:     getenv("SLIPWAY_HTTP_USERNAME"),
		password:     getenv("SLIPWAY_HTTP_PASSWORD"),
		retryMax:     2,
	}
	var err error
	b.addr, err = b.takeUserinfo(u)
	if err != nil {
		return nil, err
	}
	b.lockAddr = b.addr
	if v := getenv("SLIPWAY_HTTP_LOCK_ADDRESS"); v != "" {
		if b.lockAddr, err = b.parseAddr("SLIPWAY_HTTP_LOCK_ADDRESS", v); err != nil {
			return nil, err
		}
	}
	b.unlockAdr = b.lockAddr
	if v := getenv("SLIPWAY_HTTP_UNLOCK_ADDRESS"); v != "" {
		if b.unlockAdr, err = b.parseAddr("SLIPWAY_HTTP_UNLOCK_ADDRESS", v); err != nil {
			return nil, err
		}
	}
	if v := getenv("SLIPWAY_HTTP_RETRY_MAX"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("SLIPWAY_HTTP_RETRY_MAX %q: want a count ≥ 0", v)
		}
		b.retryMax = n
	}
	for _, s := range []struct {
		name string
		d    *time.Duration
	}{{"SLIPWAY_HTTP_RETRY_WAIT_MIN", &b.o.retryWaitMin}, {"SLIPWAY_HTTP_RETRY_WAIT_MAX", &b.o.retryWaitMax}} {
		if v := getenv(s.name); v != "" {
			d, err := parseSeconds(v)
			if err != nil {
				return nil, fmt.Errorf("%s %q: want seconds or a duration like 500ms", s.name, v)
			}
			*s.d = d
		}
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if v := getenv("SLIPWAY_HTTP_SKIP_CERT_VERIFICATION"); v == "true" || v == "1" {
		tr.TLSClientConfig = &tls.Config{InsecureSkipVerify: true} //nolint:gosec // the operator asked
	}
	// No client timeout: each request has its own (requestTimeout, --state-timeout).
	b.client = &http.Client{Transport: tr}
	return b, nil
}

func envOr(getenv func(string) string, name, def string) string {
	if v := getenv(name); v != "" {
		return v
	}
	return def
}

func parseSeconds(v string) (time.Duration, error) {
	if n, err := strconv.Atoi(v); err == nil && n >= 0 {
		return time.Duration(n) * time.Second, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return 0, errors.New("bad duration")
	}
	return d, nil
}

func (b *httpBackend) parseAddr(name, v string) (*url.URL, error) {
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, fmt.Errorf("%s %q: want an http(s) URL", name, redact.URL(v, nil))
	}
	return b.takeUserinfo(u)
}

// takeUserinfo moves credentials in the URL to basic auth (unless set from the environment)
// and returns the URL without them, so that no message can show them.
func (b *httpBackend) takeUserinfo(u *url.URL) (*url.URL, error) {
	c := *u
	if c.User != nil {
		if b.username == "" && b.password == "" {
			b.username = c.User.Username()
			b.password, _ = c.User.Password()
		}
		c.User = nil
	}
	if c.Host == "" {
		return nil, fmt.Errorf("state URL %q: no host", shownURL(&c))
	}
	return &c, nil
}

// Location is the state URL as messages, locks and `state show` name it: without its user info
// and with every query value but the lock ID redacted (an access token or a pre-signed URL's
// signature grants what a password does; issue 35).
func (b *httpBackend) Location() string { return shownURL(b.addr) }

// shownURL is u as a message may name it (see Location).
func shownURL(u *url.URL) string {
	return redact.Parsed(u, func(k string) bool { return k == "ID" })
}

// statusErr turns an unexpected answer into a sentence.
func (b *httpBackend) statusErr(what, method string, u *url.URL, r *httpResult) error {
	hint := ""
	switch r.status {
	case http.StatusUnauthorized:
		hint = ": the server wants credentials: set SLIPWAY_HTTP_USERNAME and SLIPWAY_HTTP_PASSWORD"
	case http.StatusForbidden:
		hint = ": the credentials are not allowed to do this"
	default:
		if msg := strings.TrimSpace(string(r.body)); msg != "" && len(msg) <= 200 {
			hint = ": " + msg
		}
	}
	return fmt.Errorf("state %s: %s: %s %s: %d %s%s", b.group, what, method, shownURL(u), r.status, http.StatusText(r.status), hint)
}

func (b *httpBackend) Read(ctx context.Context) (*Document, error) {
	r, err := b.do(ctx, http.MethodGet, b.addr, nil)
	if err != nil {
		return nil, fmt.Errorf("state %s: read: %w", b.group, err)
	}
	switch r.status {
	case http.StatusOK:
	case http.StatusNoContent, http.StatusNotFound:
		return nil, nil
	default:
		return nil, b.statusErr("read", http.MethodGet, b.addr, r)
	}
	if len(bytes.TrimSpace(r.body)) == 0 {
		return nil, nil
	}
	if want := r.header.Get("Content-MD5"); want != "" {
		sum := md5.Sum(r.body)
		if base64.StdEncoding.EncodeToString(sum[:]) != want {
			return nil, fmt.Errorf("state %s: read %s: the body does not match its Content-MD5: corrupt in transit", b.group, b.Location())
		}
	}
	d, err := Decode(b.Location(), r.body)
	if err != nil {
		return nil, err
	}
	return checkGroup(b.Location(), b.group, d)
}

func (b *httpBackend) Write(ctx context.Context, d *Document) error {
	stored, err := b.Read(ctx)
	if err != nil {
		return err
	}
	next, data, err := checkWrite(b.group, headOf(stored), d, Encode)
	if err != nil {
		return err
	}
	u := *b.addr
	b.mu.Lock()
	if b.lockID != "" {
		q := u.Query()
		q.Set("ID", b.lockID)
		u.RawQuery = q.Encode()
	}
	b.mu.Unlock()
	r, err := b.do(ctx, b.updateMethod, &u, data)
	if err != nil {
		return fmt.Errorf("state %s: write: %w", b.group, err)
	}
	switch r.status {
	case http.StatusOK, http.StatusCreated, http.StatusNoContent:
		commit(d, next)
		return nil
	case http.StatusLocked, http.StatusConflict:
		if h, ok := parseHolder(r.body); ok {
			return &LockError{Group: b.group, Holder: h}
		}
	}
	return b.statusErr("write", b.updateMethod, &u, r)
}

func (b *httpBackend) Delete(ctx context.Context) error {
	r, err := b.do(ctx, http.MethodDelete, b.addr, nil)
	if err != nil {
		return fmt.Errorf("state %s: delete: %w", b.group, err)
	}
	switch r.status {
	case http.StatusOK, http.StatusAccepted, http.StatusNoContent, http.StatusNotFound:
		return nil
	}
	return b.statusErr("delete", http.MethodDelete, b.addr, r)
}

func parseHolder(body []byte) (Info, bool) {
	var h Info
	if err := json.Unmarshal(body, &h); err != nil || (h.ID == "" && h.Who == "") {
		return Info{}, false
	}
	return h, true
}

func (b *httpBackend) Lock(ctx context.Context, info Info) (string, error) {
	info, data, err := lockJSON(b.group, b.Location(), info)
	if err != nil {
		return "", err
	}
	r, err := b.do(ctx, b.lockMethod, b.lockAddr, data)
	if err != nil {
		return "", fmt.Errorf("state %s: lock: %w", b.group, err)
	}
	switch r.status {
	case http.StatusOK, http.StatusCreated, http.StatusNoContent:
	case http.StatusLocked, http.StatusConflict:
		h, ok := parseHolder(r.body)
		if !ok {
			h = Info{Who: "unknown (the server did not say who)"}
		}
		if h.ID != info.ID { // the same ID: a retried request whose first answer was lost
			return "", &LockError{Group: b.group, Holder: h}
		}
	default:
		return "", b.statusErr("lock", b.lockMethod, b.lockAddr, r)
	}
	b.mu.Lock()
	b.lockID, b.lockJSON = info.ID, data
	b.mu.Unlock()
	return info.ID, nil
}

func (b *httpBackend) Unlock(ctx context.Context, id string) error {
	b.mu.Lock()
	body := b.lockJSON
	if b.lockID != id {
		body, _ = json.Marshal(Info{ID: id}) // state unlock of another run's lock
	}
	b.mu.Unlock()
	r, err := b.do(ctx, b.unlockMethod, b.unlockAdr, body)
	if err != nil {
		return fmt.Errorf("state %s: unlock: %w", b.group, err)
	}
	switch r.status {
	case http.StatusOK, http.StatusNoContent:
		b.mu.Lock()
		if b.lockID == id {
			b.lockID, b.lockJSON = "", nil
		}
		b.mu.Unlock()
		return nil
	case http.StatusLocked, http.StatusConflict:
		if h, ok := parseHolder(r.body); ok {
			return &LockIDError{Group: b.group, ID: id, Holder: h}
		}
	}
	return b.statusErr("unlock", b.unlockMethod, b.unlockAdr, r)
}

// LockInfo probes: the protocol cannot read a lock, so it locks, and unlocks at once when that
// succeeds. A run that tries to lock during those two requests is told the group is locked by
// this probe (operation "probe").
func (b *httpBackend) LockInfo(ctx context.Context) (*Info, error) {
	probe := NewInfo("probe")
	_, err := b.Lock(ctx, probe)
	var le *LockError
	if errors.As(err, &le) {
		return &le.Holder, nil
	}
	if err != nil {
		return nil, err
	}
	if err := b.Unlock(context.WithoutCancel(ctx), probe.ID); err != nil {
		return nil, fmt.Errorf("state %s: the lock probe %s could not be undone (remove it with state unlock): %w", b.group, probe.ID, err)
	}
	return nil, nil
}
