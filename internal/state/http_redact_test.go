package state_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"slipway.dev/slipway/internal/state"
)

// TestHTTPRedactsQuery: an access token or a pre-signed URL's signature in the state URL's query
// (or a lock address's) reaches no message, lock info or location; the request still carries it
// (issue 35, item 19).
func TestHTTPRedactsQuery(t *testing.T) {
	const token = "glpat-TOKEN-123"
	ctx := context.Background()
	ps := newProtoServer(false)
	srv := httptest.NewServer(ps)
	defer srv.Close()
	var mu sync.Mutex
	var notices []string
	notify := state.WithNotify(func(n state.Notice) { mu.Lock(); notices = append(notices, n.Message); mu.Unlock() })
	open := func(t *testing.T, env map[string]string, opts ...state.Option) state.Backend {
		t.Helper()
		e := map[string]string{"SLIPWAY_HTTP_USERNAME": "deploy", "SLIPWAY_HTTP_PASSWORD": "s3cret-pw",
			"SLIPWAY_HTTP_RETRY_MAX": "0"}
		for k, v := range env {
			e[k] = v
		}
		opts = append([]state.Option{state.WithGetenv(func(k string) string { return e[k] }), notify}, opts...)
		b, err := state.Open(ctx, srv.URL+"/state/g?access_token="+token, "g", nil, opts...)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	shown := func(t *testing.T, what, s string) {
		t.Helper()
		if strings.Contains(s, token) {
			t.Errorf("%s shows the token: %s", what, s)
		}
	}

	holder := open(t, nil)
	if want := srv.URL + "/state/g?access_token=REDACTED"; holder.Location() != want {
		t.Errorf("Location = %q, want %q", holder.Location(), want)
	}
	info := state.NewInfo("apply")
	info.Path = holder.Location() // as the cli does
	if _, err := holder.Lock(ctx, info); err != nil {
		t.Fatal(err)
	}
	if err := holder.Write(ctx, &state.Document{}); err != nil {
		t.Fatalf("the holder's write with the token and the lock ID: %v", err)
	}
	li, err := open(t, nil).LockInfo(ctx)
	if err != nil || li == nil {
		t.Fatalf("LockInfo = %v, %v; want the holder", li, err)
	}
	shown(t, "the lock info's path", li.Path)
	ps.mu.Lock()
	shown(t, "the lock stored on the server", string(ps.locks["g"]))
	ps.mu.Unlock()

	_, err = open(t, map[string]string{"SLIPWAY_HTTP_PASSWORD": "wrong"}).Read(ctx)
	if err == nil || !strings.Contains(err.Error(), "access_token=REDACTED") {
		t.Errorf("Read with a wrong password = %v; want a 401 naming the URL redacted", err)
	}
	shown(t, "a status error", err.Error())

	_, err = state.Open(ctx, "http://state.example.org:port/g?access_token="+token, "g", nil)
	if err == nil {
		t.Fatal("Open of an unparsable URL: no error")
	}
	shown(t, "an unparsable URL's error", err.Error())
	_, err = state.Open(ctx, srv.URL+"/g", "g", nil, state.WithGetenv(func(k string) string {
		return map[string]string{"SLIPWAY_HTTP_LOCK_ADDRESS": "ftp://state.example.org/g?token=" + token}[k]
	}))
	if err == nil {
		t.Fatal("Open with an ftp lock address: no error")
	}
	shown(t, "a bad lock address's error", err.Error())

	srv.Close()
	_, err = open(t, nil).Read(ctx)
	if err == nil {
		t.Fatal("Read of a closed server: no error")
	}
	shown(t, "a connection error", err.Error())

	hang := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	defer hang.Close()
	slow, err := state.Open(ctx, hang.URL+"/state/g?access_token="+token, "g", nil,
		state.WithGetenv(func(k string) string { return map[string]string{"SLIPWAY_HTTP_RETRY_MAX": "0"}[k] }),
		state.WithRequestTimeout(200*time.Millisecond), state.WithSlowAfter(time.Millisecond), notify)
	if err != nil {
		t.Fatal(err)
	}
	if _, err = slow.Read(ctx); err == nil {
		t.Fatal("Read of a server that does not answer: no error")
	}
	shown(t, "a timeout error", err.Error())
	mu.Lock()
	defer mu.Unlock()
	if len(notices) == 0 {
		t.Error("no notice of the slow server")
	}
	for _, n := range notices {
		shown(t, "a notice", n)
	}
}
