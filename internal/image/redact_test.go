package image

import (
	"context"
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"

	"slipway.dev/slipway/internal/image/imagetest"
)

// stallingRegistry is an in-memory registry whose upload URLs carry a _state token, as
// distribution's do, and whose uploads (PATCH) never answer until the client gives up; with
// drop, an upload's connection is closed instead, without an answer. uploading receives one
// value per upload that has started.
func stallingRegistry(t *testing.T, token string, drop bool) (host string, uploading <-chan struct{}) {
	t.Helper()
	reg := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	started := make(chan struct{}, 16)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodPatch && drop:
			// The whole body first: the client then fails reading the answer, an error that
			// names the request's URL.
			_, _ = io.Copy(io.Discard, r.Body)
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				_ = conn.Close()
			}
			return
		case r.Method == http.MethodPatch:
			select {
			case started <- struct{}{}:
			default:
			}
			// Reading the body lets the server notice the client hang up.
			_, _ = io.Copy(io.Discard, r.Body)
			<-r.Context().Done()
			return
		case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/blobs/uploads/"):
			rec := httptest.NewRecorder()
			reg.ServeHTTP(rec, r)
			for k, v := range rec.Header() {
				w.Header()[k] = v
			}
			if loc := rec.Header().Get("Location"); loc != "" {
				w.Header().Set("Location", loc+"?_state="+token)
			}
			w.WriteHeader(rec.Code)
			_, _ = w.Write(rec.Body.Bytes())
			return
		}
		reg.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://"), started
}

// TestInterruptedPushRedactsUploadURL interrupts pushes during their upload: the operator's
// ^C (which of the side-by-side requests reports first is up to the scheduler, so only the
// absence of the token is certain) and a connection that drops (the error names the upload's
// URL, with its token redacted).
func TestInterruptedPushRedactsUploadURL(t *testing.T) {
	const token = "c2VjcmV0LXVwbG9hZC1zdGF0ZQ"
	for _, tc := range []struct {
		name         string
		drop         bool
		wantRedacted bool
	}{
		{name: "cancelled", drop: false},
		{name: "connection dropped", drop: true, wantRedacted: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := interruptedPush(t, token, tc.drop)
			if got == nil {
				t.Fatal("an interrupted push succeeded")
			}
			if strings.Contains(got.Error(), token) {
				t.Errorf("the error shows the upload's _state token: %v", got)
			}
			if tc.wantRedacted && !strings.Contains(got.Error(), "_state=REDACTED") {
				t.Errorf("the error does not show the redacted upload URL: %v", got)
			}
		})
	}
}

// interruptedPush pushes a small image to a stalling registry and returns the push's error:
// cancelled once an upload started, or failed by the dropped connection.
func interruptedPush(t *testing.T, token string, drop bool) error {
	t.Helper()
	host, uploading := stallingRegistry(t, token, drop)
	root := t.TempDir()
	imagetest.WriteTree(t, root)
	opts := Options{Registry: host}
	pub, err := NewPublisher(opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		_, err := Push(ctx, NewBuilder(opts), pub, Job{Name: "web", Repository: Repository(host, "demo", "web"), Source: Source{Rootfs: root}}, nil)
		errc <- err
	}()
	if drop {
		select {
		case err := <-errc:
			return err
		case <-time.After(2 * time.Minute):
			t.Fatal("push did not end within two minutes of its dropped connections")
		}
	}
	select {
	case <-uploading:
	case err := <-errc:
		t.Fatalf("push ended before an upload started: %v", err)
	case <-time.After(time.Minute):
		t.Fatal("no upload started within a minute")
	}
	cancel() // the operator's ^C
	select {
	case err := <-errc:
		return err
	case <-time.After(time.Minute):
		t.Fatal("push did not end within a minute of its cancellation")
	}
	return nil
}

func TestRedactURLError(t *testing.T) {
	upload := func() error {
		return &url.Error{Op: "Patch", URL: "http://u:pw@r.test/v2/a/blobs/uploads/x?_state=SECRET&digest=sha256:1", Err: io.EOF}
	}
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"bare", upload()},
		// Uploads that ran side by side; fmt.Errorf fixes its text when called, so the
		// redaction happens before any wrapping (registryClient.explain).
		{"joined", errors.Join(errors.New("other"), upload())},
	} {
		t.Run(tc.name, func(t *testing.T) {
			redactURLError(tc.err)
			got := tc.err.Error()
			if strings.Contains(got, "SECRET") || strings.Contains(got, "pw") {
				t.Errorf("credential shown: %s", got)
			}
			if !strings.Contains(got, "_state=REDACTED") || !strings.Contains(got, "digest=sha256") {
				t.Errorf("want the query redacted but the protocol's own kept: %s", got)
			}
		})
	}
}
