package sidecar

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// fakeServer plays the four answers of an OpenBao server the sidecar uses: kubernetes login
// (a fixed token for the JWT "good"), and KV v2 reads of mount "secret" with that token. The
// real server's behaviour is checked by the e2e tests against the dev environment's Vault.
type fakeServer struct {
	mu      sync.Mutex
	data    map[string]map[string]any // path in the mount → keys
	logins  int
	reads   int
	refused bool // the role may not read: 403 on every read
}

const fakeToken = "fake-server-token"

func newFake(t *testing.T, data map[string]map[string]any) (*fakeServer, string) {
	f := &fakeServer{data: data}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, srv.URL
}

func (f *fakeServer) set(path, key string, v any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.data[path][key] = v
}

func (f *fakeServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	deny := func(msg string) {
		w.WriteHeader(http.StatusForbidden)
		json.NewEncoder(w).Encode(map[string]any{"errors": []string{msg}})
	}
	switch {
	case r.Method == http.MethodPut || r.Method == http.MethodPost:
		if r.URL.Path != "/v1/auth/kubernetes/login" {
			http.NotFound(w, r)
			return
		}
		var body struct{ Role, JWT string }
		json.NewDecoder(r.Body).Decode(&body)
		if body.JWT != "good" || body.Role != "node-web" {
			deny("permission denied")
			return
		}
		f.logins++
		json.NewEncoder(w).Encode(map[string]any{"auth": map[string]any{"client_token": fakeToken, "lease_duration": 600}})
	case r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/v1/secret/data/"):
		if r.Header.Get("X-Vault-Token") != fakeToken || f.refused {
			deny("permission denied")
			return
		}
		f.reads++
		d, ok := f.data[strings.TrimPrefix(r.URL.Path, "/v1/secret/data/")]
		if !ok {
			w.WriteHeader(http.StatusNotFound)
			json.NewEncoder(w).Encode(map[string]any{"errors": []string{}})
			return
		}
		json.NewEncoder(w).Encode(map[string]any{"data": map[string]any{"data": d, "metadata": map[string]any{"version": 1}}})
	default:
		http.NotFound(w, r)
	}
}
