package image

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"log"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-containerregistry/pkg/registry"
)

// countingRegistry is an in-memory plain-HTTP registry that counts its connections (a TLS
// attempt opens one too) and its requests by method and path shape; wantAuth makes it ask
// for basic credentials as a registry with a challenge does.
func countingRegistry(t *testing.T, wantAuth bool) (host string, conns func() int, reqs func() map[string]int) {
	t.Helper()
	reg := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	var mu sync.Mutex
	nConns, byKind := 0, map[string]int{}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		kind := r.Method + " manifest"
		if r.URL.Path == "/v2/" {
			kind = r.Method + " /v2/"
		}
		mu.Lock()
		byKind[kind]++
		mu.Unlock()
		if u, p, ok := r.BasicAuth(); wantAuth && (!ok || u != "user" || p != "pw") {
			w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
			http.Error(w, `{"errors":[{"code":"UNAUTHORIZED"}]}`, http.StatusUnauthorized)
			return
		}
		reg.ServeHTTP(w, r)
	}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			mu.Lock()
			nConns++
			mu.Unlock()
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://"),
		func() int { mu.Lock(); defer mu.Unlock(); return nConns },
		func() map[string]int { mu.Lock(); defer mu.Unlock(); return maps.Clone(byKind) }
}

func writeAuthFile(t *testing.T, host, user, pass string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "auth.json")
	auth := base64.StdEncoding.EncodeToString([]byte(user + ":" + pass))
	if err := os.WriteFile(p, []byte(fmt.Sprintf(`{"auths":{%q:{"auth":%q}}}`, host, auth)), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// Looking up many repositories of one registry pings it once, not once per repository, and
// tries no TLS handshake per repository against a plain-HTTP registry (issue 17).
func TestLookupPingsOncePerRegistry(t *testing.T) {
	for _, tc := range []struct {
		name     string
		wantAuth bool
	}{
		{"anonymous registry", false},
		{"registry asking for basic credentials", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			host, conns, reqs := countingRegistry(t, tc.wantAuth)
			opts := Options{Registry: host}
			if tc.wantAuth {
				opts.AuthFile = writeAuthFile(t, host, "user", "pw")
			}
			pub, err := NewPublisher(opts)
			if err != nil {
				t.Fatal(err)
			}
			const repos = 40
			var wg sync.WaitGroup
			errs := make([]error, repos)
			for i := range repos {
				wg.Go(func() {
					_, found, err := pub.Lookup(context.Background(), Repository(host, "demo", fmt.Sprintf("n%03d", i))+":c-0123456789ab")
					if err == nil && found {
						err = fmt.Errorf("found an image never pushed")
					}
					errs[i] = err
				})
			}
			wg.Wait()
			for i, err := range errs {
				if err != nil {
					t.Fatalf("lookup %d: %v", i, err)
				}
			}
			got := reqs()
			if got["GET /v2/"] > 2 {
				t.Errorf("%d pings (GET /v2/) for %d repositories, want at most 2: %v", got["GET /v2/"], repos, got)
			}
			if got["HEAD manifest"] < repos {
				t.Errorf("%d HEADs for %d repositories: %v", got["HEAD manifest"], repos, got)
			}
			// Every HEAD may take a connection of its own when they run at once; a TLS
			// attempt per repository would add as many again.
			if c := conns(); c > repos+4 {
				t.Errorf("%d connections for %d repositories, want at most %d", c, repos, repos+4)
			}
		})
	}
}
