package sidecar

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

	"slipway.dev/slipway/internal/secretsconf"
)

// credsServer is a stand-in for the two answers the static-creds source needs: the kubernetes
// login and a read of database/static-creds/<role>, whose password a test rotates. The real
// engine's rotation is checked by e2e's TestRealCentral against the dev environment's Vault.
type credsServer struct {
	mu       sync.Mutex
	password string
	reads    int
}

func (c *credsServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case r.URL.Path == "/v1/auth/kubernetes/login":
		json.NewEncoder(w).Encode(map[string]any{"auth": map[string]any{"client_token": fakeToken, "lease_duration": 600}})
	case r.Method == http.MethodGet && r.URL.Path == "/v1/database/static-creds/shop.orders" && r.Header.Get("X-Vault-Token") == fakeToken:
		c.reads++
		json.NewEncoder(w).Encode(map[string]any{"data": map[string]any{
			"username": "shop.orders", "password": c.password, "ttl": 3600, "last_vault_rotation": "2026-12-06T07:00:00Z"}})
	default:
		w.WriteHeader(http.StatusForbidden)
		json.NewEncoder(w).Encode(map[string]any{"errors": []string{"permission denied"}})
	}
}

// TestStaticCreds: files from a login's static credentials (a key and a template, one read for
// both), rewritten when OpenBao rotates the password, and the service stopped for a restart
// file.
func TestStaticCreds(t *testing.T) {
	fake := &credsServer{password: "first"}
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	tok := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tok, []byte("good"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := &secretsconf.Config{Address: srv.URL, AuthMount: "kubernetes", Role: "node-web", TokenFile: tok, Dir: t.TempDir(), PollSeconds: 1,
		ServiceContainer: "service",
		Files: []secretsconf.File{
			{Name: "password", Engine: secretsconf.EngineDatabase, Mount: "database", Path: "shop.orders", Key: "password", Restart: true},
			{Name: "pg.conf", Engine: secretsconf.EngineDatabase, Mount: "database", Path: "shop.orders", Template: "user={{ .username }} password={{ .password }}"},
		}}
	var killed []int
	s := &Sidecar{Cfg: cfg, Log: io.Discard, kill: func(pid int, _ syscall.Signal) error { killed = append(killed, pid); return nil }}
	s.Proc, s.pid = fakeProcTree(t, podProcesses), 7 // the stand-in pod of signal_test.go
	server, err := newServer(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Round(context.Background(), server); err != nil {
		t.Fatal(err)
	}
	if got := read(t, cfg.Dir, "password"); got != "first" {
		t.Errorf("password %q", got)
	}
	if got := read(t, cfg.Dir, "pg.conf"); got != "user=shop.orders password=first" {
		t.Errorf("pg.conf %q", got)
	}
	if fake.reads != 1 {
		t.Errorf("%d reads for two files of one role, want 1", fake.reads)
	}
	fake.mu.Lock()
	fake.password = "second"
	fake.mu.Unlock()
	if err := s.Round(context.Background(), server); err != nil {
		t.Fatal(err)
	}
	if got := read(t, cfg.Dir, "password"); got != "second" {
		t.Errorf("password after the rotation %q", got)
	}
	if exists(cfg.Dir, pendingRestart) {
		t.Error("the restart mark stayed after the restart")
	}
	if diff := cmp.Diff([]int{9}, killed); diff != "" {
		t.Errorf("stopped after the rotation (-want +got):\n%s", diff)
	}
}
