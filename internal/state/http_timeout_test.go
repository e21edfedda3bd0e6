package state

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// stalledServer accepts requests and answers none until the test ends.
func stalledServer(t *testing.T) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	release := make(chan struct{})
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) }) // runs first: lets srv.Close finish
	return srv, &requests
}

func TestHTTPStalledServer(t *testing.T) {
	tests := []struct {
		name     string
		retryMax string
		requests int32
	}{
		{"one request", "0", 1},
		{"each retry has its own limit", "1", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, requests := stalledServer(t)
			notices := make(chan Notice, 8)
			env := map[string]string{"SLIPWAY_HTTP_RETRY_MAX": tt.retryMax, "SLIPWAY_HTTP_RETRY_WAIT_MIN": "10ms"}
			url := strings.Replace(srv.URL, "http://", "http://deploy:s3cret-pw@", 1) + "/state/demo"
			b, err := Open(context.Background(), url, "demo", nil,
				WithGetenv(func(k string) string { return env[k] }),
				WithRequestTimeout(400*time.Millisecond), WithSlowAfter(20*time.Millisecond),
				WithNotify(func(n Notice) { notices <- n }))
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			_, err = b.Read(ctx)
			if err == nil || !strings.Contains(err.Error(), "did not answer within 400ms (--state-timeout)") {
				t.Fatalf("read from a stalled server: %v, want it to say the server did not answer within 400ms", err)
			}
			if ctx.Err() != nil {
				t.Fatalf("read ended by the test's own deadline, not the request timeout: %v", err)
			}
			if got := requests.Load(); got != tt.requests {
				t.Errorf("%d requests, want %d", got, tt.requests)
			}
			select {
			case n := <-notices:
				if n.Kind != NoticeWaiting || !strings.Contains(n.Message, "waiting for the state server") ||
					!strings.Contains(n.Message, srv.URL+"/state/demo") || strings.Contains(n.Message, "s3cret-pw") {
					t.Errorf("notice %+v: want a waiting notice naming the URL without credentials", n)
				}
			case <-ctx.Done():
				t.Fatal("no notice that slipway waits for the state server")
			}
		})
	}
}

func TestHTTPAnswerInTimeNoNotice(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNotFound)
	}))
	defer srv.Close()
	var notices atomic.Int32
	b, err := Open(context.Background(), srv.URL+"/state/demo", "demo", nil,
		WithSlowAfter(time.Minute), WithNotify(func(Notice) { notices.Add(1) }))
	if err != nil {
		t.Fatal(err)
	}
	if d, err := b.Read(context.Background()); d != nil || err != nil {
		t.Fatalf("read = %v, %v; want none", d, err)
	}
	if n := notices.Load(); n != 0 {
		t.Errorf("%d notices for a server that answered at once", n)
	}
	if got := b.(*httpBackend).o.requestTimeout; got != 30*time.Second {
		t.Errorf("request timeout %s by default, want 30s", got)
	}
}
