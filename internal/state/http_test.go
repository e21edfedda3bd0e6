package state_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"slipway.dev/slipway/internal/state"
	"slipway.dev/slipway/internal/state/statetest"
)

// protoServer is a Terraform/OpenTofu HTTP backend written from the documented protocol, for
// any number of states under /state/<name>:
//
//	default style: GET/POST/DELETE /state/x; LOCK and UNLOCK /state/x; 423 with the holder
//	gitlab style:  GET/POST/DELETE /state/x; POST and DELETE /state/x/lock; 409 with the holder
//
// A POST while locked must carry ?ID=<the lock's ID>. Basic auth is required.
type protoServer struct {
	gitlab     bool
	user, pass string

	mu      sync.Mutex
	states  map[string][]byte
	locks   map[string][]byte // name → the holder's lock info JSON
	fail    int               // answer this many next requests with 503
	methods map[string]int    // "METHOD path" → count, to check the style was spoken
}

func newProtoServer(gitlab bool) *protoServer {
	return &protoServer{gitlab: gitlab, user: "deploy", pass: "s3cret-pw",
		states: map[string][]byte{}, locks: map[string][]byte{}, methods: map[string]int{}}
}

func (s *protoServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if u, p, ok := r.BasicAuth(); !ok || u != s.user || p != s.pass {
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail > 0 {
		s.fail--
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	rest, ok := strings.CutPrefix(r.URL.Path, "/state/")
	if !ok {
		http.NotFound(w, r)
		return
	}
	name, isLockPath := strings.CutSuffix(rest, "/lock")
	s.methods[r.Method+" "+map[bool]string{true: "lock", false: "state"}[isLockPath]]++
	lockedStatus := http.StatusLocked
	if s.gitlab {
		lockedStatus = http.StatusConflict
	}
	lockOp, unlockOp := false, false
	if s.gitlab {
		lockOp = isLockPath && r.Method == http.MethodPost
		unlockOp = isLockPath && r.Method == http.MethodDelete
	} else {
		lockOp = !isLockPath && r.Method == "LOCK"
		unlockOp = !isLockPath && r.Method == "UNLOCK"
	}
	switch {
	case lockOp:
		var info state.Info
		if err := json.Unmarshal(body, &info); err != nil || info.ID == "" {
			http.Error(w, "bad lock info", http.StatusBadRequest)
			return
		}
		if cur, held := s.locks[name]; held {
			w.WriteHeader(lockedStatus)
			_, _ = w.Write(cur)
			return
		}
		s.locks[name] = body
	case unlockOp:
		cur, held := s.locks[name]
		if !held {
			return // unlocking an unlocked state is fine, as servers of the protocol do
		}
		var want, got state.Info
		_ = json.Unmarshal(cur, &want)
		if len(body) > 0 {
			if err := json.Unmarshal(body, &got); err != nil {
				http.Error(w, "bad lock info", http.StatusBadRequest)
				return
			}
			if got.ID != want.ID {
				w.WriteHeader(lockedStatus)
				_, _ = w.Write(cur)
				return
			}
		}
		delete(s.locks, name)
	case isLockPath:
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	case r.Method == http.MethodGet:
		st, ok := s.states[name]
		if !ok {
			if s.gitlab {
				w.WriteHeader(http.StatusNoContent)
			} else {
				w.WriteHeader(http.StatusNotFound)
			}
			return
		}
		_, _ = w.Write(st)
	case r.Method == http.MethodPost:
		if cur, held := s.locks[name]; held {
			var want state.Info
			_ = json.Unmarshal(cur, &want)
			if r.URL.Query().Get("ID") != want.ID {
				w.WriteHeader(lockedStatus)
				_, _ = w.Write(cur)
				return
			}
		}
		if !json.Valid(body) {
			http.Error(w, "not JSON", http.StatusBadRequest)
			return
		}
		s.states[name] = body
	case r.Method == http.MethodDelete:
		delete(s.states, name)
	default:
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	}
}

func httpOpener(srv *httptest.Server, gitlab bool, env map[string]string) statetest.Opener {
	return func(t testing.TB, group string) state.Backend {
		e := map[string]string{
			"SLIPWAY_HTTP_USERNAME":       "deploy",
			"SLIPWAY_HTTP_PASSWORD":       "s3cret-pw",
			"SLIPWAY_HTTP_RETRY_WAIT_MIN": "10ms",
		}
		if gitlab {
			e["SLIPWAY_HTTP_LOCK_ADDRESS"] = srv.URL + "/state/" + group + "/lock"
			e["SLIPWAY_HTTP_UNLOCK_ADDRESS"] = srv.URL + "/state/" + group + "/lock"
			e["SLIPWAY_HTTP_LOCK_METHOD"] = "POST"
			e["SLIPWAY_HTTP_UNLOCK_METHOD"] = "DELETE"
		}
		for k, v := range env {
			e[k] = v
		}
		b, err := state.Open(context.Background(), srv.URL+"/state/"+group, group, nil,
			state.WithGetenv(func(k string) string { return e[k] }))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
}

func TestHTTPBackend(t *testing.T) {
	for _, style := range []struct {
		name   string
		gitlab bool
	}{{"default", false}, {"gitlab", true}} {
		t.Run(style.name, func(t *testing.T) {
			ps := newProtoServer(style.gitlab)
			srv := httptest.NewServer(ps)
			defer srv.Close()
			statetest.Conformance(t, httpOpener(srv, style.gitlab, nil), statetest.Caps{})
			ps.mu.Lock()
			defer ps.mu.Unlock()
			want := []string{"LOCK state", "UNLOCK state"}
			if style.gitlab {
				want = []string{"POST lock", "DELETE lock"}
			}
			for _, m := range want {
				if ps.methods[m] == 0 {
					t.Errorf("the server saw no %q; saw %v", m, ps.methods)
				}
			}
		})
	}
}

// TestHTTPWriteNeedsLockID: while locked, the server refuses a write without the lock's ID; the
// holder's writes carry it.
func TestHTTPWriteNeedsLockID(t *testing.T) {
	ctx := context.Background()
	srv := httptest.NewServer(newProtoServer(false))
	defer srv.Close()
	open := httpOpener(srv, false, nil)
	holder, other := open(t, "g"), open(t, "g")
	id, err := holder.Lock(ctx, state.NewInfo("apply"))
	if err != nil {
		t.Fatal(err)
	}
	if err := holder.Write(ctx, &state.Document{}); err != nil {
		t.Fatalf("the holder's write: %v", err)
	}
	d, err := other.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var le *state.LockError
	if err := other.Write(ctx, d); !errors.As(err, &le) || le.Holder.ID != id {
		t.Fatalf("a write without the lock = %v; want a LockError naming %s", err, id)
	}
}

func TestHTTPAuthAndRetry(t *testing.T) {
	ctx := context.Background()
	ps := newProtoServer(false)
	srv := httptest.NewServer(ps)
	defer srv.Close()

	bad := httpOpener(srv, false, map[string]string{"SLIPWAY_HTTP_PASSWORD": "wrong-pw"})(t, "g")
	_, err := bad.Read(ctx)
	if err == nil || !strings.Contains(err.Error(), "401") || strings.Contains(err.Error(), "wrong-pw") {
		t.Fatalf("Read with a wrong password = %v; want a 401 error without the password", err)
	}

	// Credentials in the URL work and never show.
	b, err := state.Open(ctx, strings.Replace(srv.URL, "http://", "http://deploy:s3cret-pw@", 1)+"/state/u", "u", nil,
		state.WithGetenv(func(string) string { return "" }))
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Write(ctx, &state.Document{}); err != nil {
		t.Fatalf("Write with URL credentials: %v", err)
	}
	if strings.Contains(b.Location(), "s3cret") {
		t.Fatalf("Location %q shows the password", b.Location())
	}
	info := state.NewInfo("apply")
	if _, err := b.Lock(ctx, info); err != nil {
		t.Fatal(err)
	}
	li, err := b.LockInfo(ctx)
	if err != nil || li == nil || strings.Contains(li.Path, "s3cret") {
		t.Fatalf("LockInfo = %+v, %v; want the holder, without the password in Path", li, err)
	}

	// Two 503s are retried (default: 2 retries); three are not.
	good := httpOpener(srv, false, nil)(t, "g")
	ps.mu.Lock()
	ps.fail = 2
	ps.mu.Unlock()
	if _, err := good.Read(ctx); err != nil {
		t.Fatalf("Read through two 503s: %v", err)
	}
	ps.mu.Lock()
	ps.fail = 3
	ps.mu.Unlock()
	if _, err := good.Read(ctx); err == nil || !strings.Contains(err.Error(), "503") {
		t.Fatalf("Read through three 503s = %v; want a 503 error", err)
	}

	// A connection refused is retried, then reported.
	srv.Close()
	if _, err := good.Read(ctx); err == nil || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("Read of a closed server = %v; want connection refused", err)
	}
}

// TestHTTPLockInfoProbe: with the lock free, LockInfo leaves it free.
func TestHTTPLockInfoProbe(t *testing.T) {
	ctx := context.Background()
	ps := newProtoServer(true)
	srv := httptest.NewServer(ps)
	defer srv.Close()
	b := httpOpener(srv, true, nil)(t, "p")
	if li, err := b.LockInfo(ctx); err != nil || li != nil {
		t.Fatalf("LockInfo = %v, %v; want nil, nil", li, err)
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if len(ps.locks) != 0 {
		t.Fatalf("the probe left a lock: %s", ps.locks["p"])
	}
}
