package image

// The publisher and its registry: one that is unreachable, missing, wants credentials, or
// is reached over plain HTTP.

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"

	"slipway.dev/slipway/internal/event"
	"slipway.dev/slipway/internal/image/imagetest"
)

func TestUnreachableRegistry(t *testing.T) {
	// A port that was just free: nothing listens on it.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	host := l.Addr().String()
	l.Close()

	opts := Options{Registry: host}
	root := t.TempDir()
	imagetest.WriteTree(t, root)
	pub, err := NewPublisher(opts)
	if err != nil {
		t.Fatal(err)
	}
	var events []event.Image
	var mu sync.Mutex
	jobs := []Job{
		{Name: "a", Repository: Repository(host, "demo", "a"), Source: Source{Rootfs: root}},
		{Name: "b", Repository: Repository(host, "demo", "b"), Source: Source{Rootfs: root}},
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err = PushAll(ctx, NewBuilder(opts), pub, jobs, 2, func(e event.Image) { mu.Lock(); events = append(events, e); mu.Unlock() })
	if err == nil {
		t.Fatal("push to an unreachable registry succeeded")
	}
	if want := "registry " + host + " unreachable"; !strings.Contains(err.Error(), want) {
		t.Errorf("error %q: want it to say %q", err, want)
	}
	for _, e := range events {
		if e.Kind == event.ImagePushed || e.Kind == event.ImageProgress || e.Kind == event.ImageExists {
			t.Errorf("event %+v after an unreachable registry", e)
		}
	}
}

func TestNoRegistry(t *testing.T) {
	_, err := NewPublisher(Options{})
	if !errors.Is(err, ErrNoRegistry) || !strings.Contains(err.Error(), "K8S_REGISTRY") {
		t.Errorf("error %v: want ErrNoRegistry naming K8S_REGISTRY", err)
	}
}

// basicAuthRegistry is an in-memory registry that wants user:secret-password.
func basicAuthRegistry(t *testing.T) string {
	t.Helper()
	reg := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, p, ok := r.BasicAuth()
		if !ok || u != "user" || p != "secret-password" {
			w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
			http.Error(w, `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`, http.StatusUnauthorized)
			return
		}
		reg.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

func TestAuthFile(t *testing.T) {
	host := basicAuthRegistry(t)
	dir := t.TempDir()
	authFile := func(user, pass string) string {
		p := filepath.Join(dir, user+pass+".json")
		auth := base64.StdEncoding.EncodeToString([]byte(user + ":" + pass))
		doc := fmt.Sprintf(`{"auths":{%q:{"auth":%q}}}`, host, auth)
		if err := os.WriteFile(p, []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	root := t.TempDir()
	imagetest.WriteTree(t, root)
	for _, tc := range []struct {
		name     string
		authFile string
		wantErr  string
	}{
		{"right password", authFile("user", "secret-password"), ""},
		{"wrong password", authFile("user", "wrong-password"), "401"},
		{"no file", filepath.Join(dir, "missing.json"), "401"},
		{"not a config", func() string {
			p := filepath.Join(dir, "bad.json")
			_ = os.WriteFile(p, []byte(`{"auths": "secret-password`), 0o600)
			return p
		}(), "not a docker config file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := Options{Registry: host, AuthFile: tc.authFile}
			pub, err := NewPublisher(opts)
			var res Result
			if err == nil {
				job := Job{Name: "web", Repository: Repository(host, "demo", "web"), Source: Source{Rootfs: root}}
				res, err = Push(context.Background(), NewBuilder(opts), pub, job, nil)
			}
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("push: %v", err)
			case tc.wantErr == "" && !strings.HasPrefix(res.Digest.String(), host+"/demo/web@sha256:"):
				t.Errorf("digest %q", res.Digest)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("error %v, want one containing %q", err, tc.wantErr)
			}
			if err != nil {
				for _, secret := range []string{"secret-password", "wrong-password", base64.StdEncoding.EncodeToString([]byte("user:wrong-password"))} {
					if strings.Contains(err.Error(), secret) {
						t.Errorf("error shows a credential: %v", err)
					}
				}
			}
		})
	}
}

func TestPlainHTTPOnlyOnLoopback(t *testing.T) {
	for _, tc := range []struct {
		host     string
		insecure bool
		allowed  bool
	}{
		{"127.0.0.1:5000", false, true},
		{"127.8.9.1:5000", false, true},
		{"[::1]:5000", false, true},
		{"localhost:5000", false, true},
		{"reg.localhost:5000", false, true},
		{"10.1.2.3:5000", false, false},
		{"192.168.1.10:5000", false, false},
		{"registry.local:5000", false, false},
		{"registry.example:5000", false, false},
		{"registry.example:5000", true, true},
	} {
		t.Run(fmt.Sprintf("%s insecure=%v", tc.host, tc.insecure), func(t *testing.T) {
			g := &plainHTTPGuard{base: roundTripFunc(func(*http.Request) (*http.Response, error) {
				return &http.Response{StatusCode: 200, Body: http.NoBody}, nil
			}), insecure: tc.insecure}
			req, _ := http.NewRequest(http.MethodGet, "http://"+tc.host+"/v2/", nil)
			_, err := g.RoundTrip(req)
			if got := err == nil; got != tc.allowed {
				t.Errorf("plain HTTP allowed %v (%v), want %v", got, err, tc.allowed)
			}
		})
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
