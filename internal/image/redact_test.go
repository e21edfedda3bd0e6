package image

import (
	"context"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"
)

// stallingRegistry is an in-memory registry whose upload URLs carry a _state token, as
// distribution's do, and whose uploads (PATCH) never answer until the client gives up.
// uploading receives one value per upload that has started.
func stallingRegistry(t *testing.T, token string) (host string, uploading <-chan struct{}) {
	t.Helper()
	reg := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	started := make(chan struct{}, 16)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodPatch:
			started <- struct{}{}
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

func TestInterruptedPushRedactsUploadURL(t *testing.T) {
	const token = "c2VjcmV0LXVwbG9hZC1zdGF0ZQ"
	host, uploading := stallingRegistry(t, token)
	root := t.TempDir()
	writeTree(t, root)
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
	select {
	case <-uploading:
	case err := <-errc:
		t.Fatalf("push ended before an upload started: %v", err)
	case <-time.After(time.Minute):
		t.Fatal("no upload started within a minute")
	}
	cancel() // the operator's ^C
	var got error
	select {
	case got = <-errc:
	case <-time.After(time.Minute):
		t.Fatal("push did not end within a minute of its cancellation")
	}
	if got == nil {
		t.Fatal("an interrupted push succeeded")
	}
	if strings.Contains(got.Error(), token) {
		t.Errorf("the error shows the upload's _state token: %v", got)
	}
	if !strings.Contains(got.Error(), "_state=REDACTED") {
		t.Errorf("the error does not show the redacted upload URL: %v", got)
	}
}
