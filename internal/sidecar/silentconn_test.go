package sidecar

import (
	"context"
	"encoding/pem"
	"io"
	"net"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"slipway.dev/slipway/internal/secretsconf"
)

// silencer is a stand-in for the network between the sidecar and its server: a TCP proxy
// whose open connections can go silent, their bytes dropped both ways with no FIN or RST (a
// peer gone without a word), while new connections pass.
type silencer struct {
	l     net.Listener
	mu    sync.Mutex
	conns []net.Conn
	muted map[net.Conn]bool
}

func newSilencer(t *testing.T, upstream string) *silencer {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &silencer{l: l, muted: map[net.Conn]bool{}}
	t.Cleanup(func() {
		l.Close()
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, c := range s.conns {
			c.Close()
		}
	})
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", upstream)
			if err != nil {
				c.Close()
				continue
			}
			s.mu.Lock()
			s.conns = append(s.conns, c, up)
			s.mu.Unlock()
			go s.pipe(c, up, c)
			go s.pipe(up, c, c)
		}
	}()
	return s
}

// pipe copies src to dst until src ends, dropping what comes once client's connection is muted.
func (s *silencer) pipe(dst, src, client net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if err != nil {
			return
		}
		s.mu.Lock()
		muted := s.muted[client]
		s.mu.Unlock()
		if !muted {
			dst.Write(buf[:n])
		}
	}
}

// silence mutes every connection open now; it returns how many clients had connected.
func (s *silencer) silence() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := 0; i < len(s.conns); i += 2 {
		s.muted[s.conns[i]] = true
	}
	return len(s.conns) / 2
}

func (s *silencer) dialed() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns) / 2
}

// TestRoundRedialsASilentConnection: the sidecar's connection to its server (HTTP/2 over TLS,
// as with the dev environment's Vault) goes silent after a round; the secret changes. The file
// is rewritten on a new connection well before the request timeout, not only once a request
// gave up after it, nor never (before, every later request waited on the silent connection
// and timed out).
func TestRoundRedialsASilentConnection(t *testing.T) {
	f := &fakeServer{data: map[string]map[string]any{"web/conf": {"level": "one"}}}
	ts := httptest.NewUnstartedServer(f)
	ts.EnableHTTP2 = true
	ts.StartTLS()
	t.Cleanup(ts.Close)
	link := newSilencer(t, ts.Listener.Addr().String())
	tok := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tok, []byte("good\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := &secretsconf.Config{
		Address: "https://" + link.l.Addr().String(), AuthMount: "kubernetes", Role: "node-web", TokenFile: tok,
		CAPEM: string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ts.Certificate().Raw})),
		Dir:   t.TempDir(), PollSeconds: 1, ServiceContainer: "service",
		Files: []secretsconf.File{{Name: "level", Mount: "secret", Path: "web/conf", Key: "level"}},
	}
	s := &Sidecar{Cfg: cfg, Log: io.Discard, kill: func(int, syscall.Signal) error {
		t.Error("a kill without a restart secret")
		return nil
	}}
	ctx := context.Background()
	srv, err := newServer(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Round(ctx, srv); err != nil {
		t.Fatal(err)
	}
	if got := read(t, cfg.Dir, "level"); got != "one" {
		t.Fatalf("level after the first round: %q", got)
	}

	f.set("web/conf", "level", "two")
	if n := link.silence(); n != 1 {
		t.Fatalf("%d connections before the silence, want the one the rounds share", n)
	}
	// Rounds as Run makes them, until the file has the new value; less than requestTimeout.
	limit := requestTimeout * 2 / 3
	start := time.Now()
	wait, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	for read(t, cfg.Dir, "level") != "two" {
		if wait.Err() != nil {
			t.Fatalf("level not rewritten within %s of its connection going silent (connections dialed: %d)", limit, link.dialed())
		}
		if err := s.Round(wait, srv); err != nil {
			t.Logf("round after %s: %v", time.Since(start).Round(time.Millisecond), err)
		}
	}
	t.Logf("level rewritten %s after the connection went silent, on connection %d", time.Since(start).Round(time.Millisecond), link.dialed())
}
