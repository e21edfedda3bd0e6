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
	"sync/atomic"
	"testing"

	"github.com/google/go-containerregistry/pkg/registry"
)

// countingRegistry is an in-memory plain-HTTP registry that counts the TLS handshakes tried
// on it (connections whose first byte is a TLS handshake record) and its requests by method
// and path shape; wantAuth makes it ask for basic credentials as a registry with a challenge
// does.
func countingRegistry(t *testing.T, wantAuth bool) (host string, tlsTries func() int, reqs func() map[string]int) {
	t.Helper()
	reg := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	var mu sync.Mutex
	byKind := map[string]int{}
	var tries atomic.Int64
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
	srv.Listener = firstByteListener{Listener: srv.Listener, tls: &tries}
	srv.Start()
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://"),
		func() int { return int(tries.Load()) },
		func() map[string]int { mu.Lock(); defer mu.Unlock(); return maps.Clone(byKind) }
}

type firstByteListener struct {
	net.Listener
	tls *atomic.Int64
}

func (l firstByteListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &firstByteConn{Conn: c, tls: l.tls}, nil
}

type firstByteConn struct {
	net.Conn
	tls  *atomic.Int64
	seen bool
}

func (c *firstByteConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 && !c.seen {
		c.seen = true
		if p[0] == 0x16 { // TLS record type: handshake
			c.tls.Add(1)
		}
	}
	return n, err
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
			host, tlsTries, reqs := countingRegistry(t, tc.wantAuth)
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
			if n := tlsTries(); n > 1 {
				t.Errorf("%d TLS handshakes tried on a plain-HTTP registry for %d repositories, want at most 1", n, repos)
			}
		})
	}
}
