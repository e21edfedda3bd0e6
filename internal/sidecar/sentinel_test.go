package sidecar

import (
	"bytes"
	"context"
	"encoding/pem"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"slipway.dev/slipway/internal/openbao"
	"slipway.dev/slipway/internal/secretsconf"
)

// The sentinels: values that appear nowhere unless a value leaked. The number is one too: an
// index or a length taken from a secret must not show either.
const (
	sentinel    = "SENTINEL-7f3a9c"
	sentinelNum = 987654321
)

// sentinelData is one secret whose every key holds a sentinel, in each JSON shape a KV v2
// value can have.
func sentinelData() map[string]any {
	return map[string]any{
		"password": sentinel + "-pw",
		"env":      "A=" + sentinel + "-env\n",
		"n":        sentinelNum, // the client reads it back as a json.Number
		"list":     []any{sentinel + "-list"},
		"m":        map[string]any{"k": sentinel + "-map"},
	}
}

// noSentinel fails when text holds a sentinel or a piece of one.
func noSentinel(t *testing.T, where, text string) {
	t.Helper()
	for _, s := range []string{sentinel, "SENTINEL", "7f3a9c", "987654321", "9.87654321e+08"} {
		if strings.Contains(text, s) {
			t.Errorf("%s shows a value (%q): %s", where, s, text)
		}
	}
}

// sentinelSidecar is a sidecar over the secret web/s of sentinelData with one file f (its
// mount and path set here), logging into log.
func sentinelSidecar(t *testing.T, f secretsconf.File, log *syncBuffer) (*Sidecar, *fakeServer) {
	t.Helper()
	fake, url := newFake(t, map[string]map[string]any{"web/s": sentinelData()})
	tok := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tok, []byte("good"), 0o600); err != nil {
		t.Fatal(err)
	}
	f.Mount, f.Path = "secret", cmpOr(f.Path, "web/s")
	cfg := &secretsconf.Config{Address: url, AuthMount: "kubernetes", Role: "node-web", TokenFile: tok,
		Dir: t.TempDir(), PollSeconds: 1, Files: []secretsconf.File{f}}
	return &Sidecar{Cfg: cfg, Log: log, kill: func(int, syscall.Signal) error { return nil }}, fake
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// syncBuffer is a log the sidecar's goroutine writes while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestNoValueInErrors: every way the sidecar fails on a secret (each template error text/
// template has that can quote data, a missing key or variable, bad base64, a refused or missing
// secret, a refused login, an unwritable volume) ends Run with an error (what the container
// prints, so its log and its termination message) that names the file, the key and the
// cause, and no value; the log says none either.
func TestNoValueInErrors(t *testing.T) {
	tmpl := func(s string) secretsconf.File { return secretsconf.File{Name: "app.conf", Template: s} }
	tests := []struct {
		name  string
		f     secretsconf.File
		setup func(s *Sidecar, f *fakeServer)
		want  string // the error, whole
	}{
		{"range over a string", tmpl("{{ range .password }}x{{ end }}"), nil,
			"file app.conf: template line 1 col 9 at <.password>: range can't iterate over this value (not a list, a map or a number)"},
		{"range of two variables over a string", tmpl("{{ range $k, $v := .password }}{{ end }}"), nil,
			"file app.conf: template line 1 col 19 at <.password>: range can't iterate over this value (not a list, a map or a number)"},
		{"maps compared", tmpl("{{ eq .m .m }}"), nil,
			"file app.conf: template line 1 col 3 at <eq .m .m>: error calling eq: the values are not comparable"},
		{"string compared with a map", tmpl("{{ eq .password .m }}"), nil,
			"file app.conf: template line 1 col 3 at <eq .password .m>: error calling eq: incompatible types for comparison: string and map[string]interface {}"},
		{"index with a secret number", tmpl("{{ index .list .n }}"), nil,
			"file app.conf: template line 1 col 3 at <index .list .n>: error calling index: cannot index slice/array with type json.Number"},
		{"index out of range", tmpl("{{ index .list 5 }}"), nil,
			"file app.conf: template line 1 col 3 at <index .list 5>: error calling index: index out of range"},
		{"slice indexes reversed", tmpl("{{ slice .password 3 1 }}"), nil,
			"file app.conf: template line 1 col 3 at <slice .password 3 1>: error calling slice: invalid slice index"},
		{"field of a string", tmpl("{{ .password.foo }}"), nil,
			"file app.conf: template line 1 col 12 at <.password.foo>: can't evaluate field foo in type interface {}"},
		{"call of a string", tmpl("{{ call .password }}"), nil,
			"file app.conf: template line 1 col 3 at <call .password>: error calling call: non-function .password of type string"},
		{"len of a number", tmpl("{{ len 3 }}"), nil,
			"file app.conf: template line 1 col 3 at <len 3>: error calling len: len of type int"},
		{"missing key in a template", tmpl("{{ .nope }}"), nil,
			`file app.conf: template line 1 col 3 at <.nope>: map has no entry for key "nope"`},
		{"string ordered against a number", tmpl("{{ lt .password 3 }}"), nil,
			"file app.conf: template line 1 col 3 at <lt .password 3>: error calling lt: incompatible types for comparison: string and int"},
		{"an action holding >:", tmpl(`{{ eq .m ">: x" }}`), nil,
			`file app.conf: template line 1 col 3 at <eq .m ">: the template failed (text/template's message is not shown: it can hold a value)`},
		{"missing key", secretsconf.File{Name: "pw", Key: "nope"}, nil, "file pw: secret secret/web/s has no key nope"},
		{"missing variable", secretsconf.File{Name: "db", Key: "env", Variable: "B"}, nil, "file db: key env of secret/web/s has no variable B"},
		{"not base64", secretsconf.File{Name: "k", Key: "password", Encoding: "base64"}, nil,
			"file k: key password of secret/web/s is not base64: illegal base64 data at input byte 8"},
		{"no such secret", secretsconf.File{Name: "pw", Path: "web/none", Key: "password"}, nil, "file pw: read secret/web/none: secret not found: at secret/data/web/none"},
		{"read refused", secretsconf.File{Name: "pw", Key: "password"}, func(_ *Sidecar, f *fakeServer) { f.refused = true },
			"file pw: read secret/web/s: 403 permission denied"},
		{"login refused", secretsconf.File{Name: "pw", Key: "password"}, func(s *Sidecar, _ *fakeServer) {
			os.WriteFile(s.Cfg.TokenFile, []byte("another node's token"), 0o600)
		}, "login to {{ADDR}} as role node-web: 403 permission denied"},
		{"volume not writable", secretsconf.File{Name: "pw", Key: "password"}, func(s *Sidecar, _ *fakeServer) {
			s.Cfg.Dir = filepath.Join(s.Cfg.Dir, "missing")
		}, "file pw: open {{DIR}}/.pw.tmp-"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var log syncBuffer
			s, f := sentinelSidecar(t, tt.f, &log)
			if tt.setup != nil {
				tt.setup(s, f)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			err := s.Run(ctx)
			if err == nil {
				t.Fatal("run succeeded")
			}
			want := strings.NewReplacer("{{ADDR}}", s.Cfg.Address, "{{DIR}}", s.Cfg.Dir).Replace(tt.want)
			if !strings.HasPrefix(err.Error(), want) {
				t.Errorf("error\n %s\nwant it to start with\n %s", err, want)
			}
			noSentinel(t, "the error", err.Error())
			noSentinel(t, "the log", log.String())
		})
	}
}

// TestNoValueInLaterErrors: a secret that changes shape after the files are written (a list
// that becomes a string, the issue's `range` over a password) is logged, round after round,
// without its value, and the file keeps its last good bytes.
func TestNoValueInLaterErrors(t *testing.T) {
	var log syncBuffer
	s, f := sentinelSidecar(t, secretsconf.File{Name: "app.conf", Template: "{{ range .list }}{{ . }}{{ end }}"}, &log)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(log.String(), "all 1 files written") && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	f.set("web/s", "list", sentinel+"-now-a-string")
	for !strings.Contains(log.String(), "range can't iterate") && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("run: %v", err)
	}
	got := log.String()
	if !strings.Contains(got, "file app.conf: template line 1 col 9 at <.list>: range can't iterate over this value") {
		t.Errorf("the log does not say why the template failed:\n%s", got)
	}
	noSentinel(t, "the log", got)
	if b, _ := os.ReadFile(filepath.Join(s.Cfg.Dir, "app.conf")); string(b) != sentinel+"-list" {
		t.Errorf("app.conf holds %d bytes, not its last good content", len(b))
	}
}

// TestLongestNameWrites: a file of secretsconf.MaxFileName bytes is written (its temporary
// file, with the most digits os.CreateTemp gives, still fits in NAME_MAX), and one longer
// than that by the digits cannot be: the limit spec checks at load is the real one.
func TestLongestNameWrites(t *testing.T) {
	dir := t.TempDir()
	name := strings.Repeat("n", secretsconf.MaxFileName)
	for i := 0; i < 20; i++ { // the random suffix varies in length: try several
		if err := writeAtomic(dir, name, []byte("x")); err != nil {
			t.Fatalf("a name of %d bytes: %v", len(name), err)
		}
	}
	if err := writeAtomic(dir, name+strings.Repeat("n", 10), []byte("x")); err == nil {
		t.Errorf("a name of %d bytes was written: NAME_MAX is not 255 here, the limit proves nothing", len(name)+10)
	}
}

// TestCAPinRefused: a sidecar whose fetched CA is not the one caSha256 pins does not start
// (no login, no file), saying both digests; the pinned one lets it start.
func TestCAPinRefused(t *testing.T) {
	tlsSrv := httptest.NewTLSServer(http.NotFoundHandler())
	t.Cleanup(tlsSrv.Close)
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: tlsSrv.Certificate().Raw})
	pki := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(ca) }))
	t.Cleanup(pki.Close)
	for _, tc := range []struct {
		name, pin string
		refused   bool
	}{
		{"another CA", strings.Repeat("0", 64), true},
		{"the pinned CA", openbao.CADigest(ca), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var log syncBuffer
			s, f := sentinelSidecar(t, secretsconf.File{Name: "pw", Key: "password"}, &log)
			s.Cfg.CAFetchURL, s.Cfg.CASHA256 = pki.URL, tc.pin
			_, err := newServer(context.Background(), s.Cfg)
			var pe *openbao.CAPinError
			if tc.refused != errors.As(err, &pe) || (!tc.refused && err != nil) {
				t.Fatalf("connect: %v (refused wanted: %v)", err, tc.refused)
			}
			if tc.refused && f.logins != 0 {
				t.Errorf("%d logins with a refused CA", f.logins)
			}
		})
	}
}
