package openbao

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// tokenWatch is a server that records every X-Vault-Token it is sent, answering health.
type tokenWatch struct {
	mu     sync.Mutex
	tokens []string
}

func (w *tokenWatch) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	w.mu.Lock()
	if tok := r.Header.Get("X-Vault-Token"); tok != "" {
		w.tokens = append(w.tokens, tok)
	}
	w.mu.Unlock()
	if r.URL.Path == "/v1/sys/health" {
		_, _ = rw.Write([]byte(`{"initialized":true,"sealed":false}`))
		return
	}
	_, _ = rw.Write([]byte(`{"data":{"audience":"openbao"}}`))
}

// nonLoopback serves h over plain HTTP on an address of this machine that is not a loopback
// one (the test fails when the machine has none: the check needs one).
func nonLoopback(t *testing.T, h http.Handler) string {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		ipn, ok := a.(*net.IPNet)
		if !ok || ipn.IP.IsLoopback() || ipn.IP.To4() == nil {
			continue
		}
		l, err := net.Listen("tcp", net.JoinHostPort(ipn.IP.String(), "0"))
		if err != nil {
			continue
		}
		s := httptest.NewUnstartedServer(h)
		s.Listener.Close()
		s.Listener = l
		s.Start()
		t.Cleanup(s.Close)
		return s.URL
	}
	t.Fatal("this machine has no non-loopback IPv4 address to listen on")
	return ""
}

// TestTokenNeverInClear: plan's token goes over plain http:// only to a loopback address: a
// server at another http:// address answers health but is never sent the token (the role
// check says why), and a loopback server's redirect to such an address is not followed with it.
func TestTokenNeverInClear(t *testing.T) {
	const token = "plan-token-sentinel"
	far := &tokenWatch{}
	farURL := nonLoopback(t, far)
	c, err := New(farURL, "", token, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Health(context.Background()); err != nil {
		t.Fatalf("health without a token: %v", err)
	}
	if _, err := c.KubernetesRole(context.Background(), "kubernetes", "node-web"); !errors.Is(err, ErrTokenWithheld) {
		t.Errorf("role check over plain http to %s: %v, want ErrTokenWithheld", farURL, err)
	}
	if !strings.Contains(ErrTokenWithheld.Error(), "loopback") {
		t.Errorf("the refusal does not say where a token may go: %v", ErrTokenWithheld)
	}

	near := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, farURL+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	t.Cleanup(near.Close)
	c, err = New(near.URL, "", token, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.KubernetesRole(context.Background(), "kubernetes", "node-web"); err == nil {
		t.Error("a redirect from loopback to plain http elsewhere was followed")
	}
	far.mu.Lock()
	defer far.mu.Unlock()
	if len(far.tokens) > 0 {
		t.Errorf("the server at %s got the token over plain http %d time(s)", farURL, len(far.tokens))
	}
}

func TestLoopback(t *testing.T) {
	for addr, want := range map[string]bool{
		"http://127.0.0.1:8200":   true,
		"http://127.9.9.9":        true,
		"http://[::1]:8200":       true,
		"http://localhost:8200":   true,
		"http://vault.localhost":  true,
		"http://10.0.0.1:8200":    false,
		"http://localhost.evil.x": false,
		"http://bao.example:8200": false,
	} {
		if got := Loopback(addr); got != want {
			t.Errorf("Loopback(%s) = %v, want %v", addr, got, want)
		}
	}
	if PlainHTTP("https://127.0.0.1") || !PlainHTTP("http://bao") {
		t.Error("PlainHTTP mistakes the scheme")
	}
}

// TestFetchCAPin: a caSha256 pin lets through the CA it names and refuses another, naming both
// digests; no pin takes what the URL serves.
func TestFetchCAPin(t *testing.T) {
	ca := []byte("-----BEGIN CERTIFICATE-----\nstand-in\n-----END CERTIFICATE-----\n")
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(ca) }))
	t.Cleanup(s.Close)
	ctx := context.Background()
	if b, err := FetchCA(ctx, s.URL, CADigest(ca)); err != nil || string(b) != string(ca) {
		t.Errorf("the pinned CA: %q, %v", b, err)
	}
	if b, err := FetchCA(ctx, s.URL, ""); err != nil || string(b) != string(ca) {
		t.Errorf("no pin: %q, %v", b, err)
	}
	wrong := strings.Repeat("0", 64)
	_, err := FetchCA(ctx, s.URL, wrong)
	var pe *CAPinError
	if !errors.As(err, &pe) || pe.Got != CADigest(ca) || pe.Want != wrong {
		t.Fatalf("another CA: %v", err)
	}
	if !strings.Contains(err.Error(), "refused") {
		t.Errorf("the error does not say it refused: %v", err)
	}
}
