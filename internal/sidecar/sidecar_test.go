package sidecar

import (
	"context"
	"encoding/base64"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"slipway.dev/slipway/internal/secretsconf"
)

const dbEnv = "# an env file\nexport DB_URL=\"postgres://db/app\"\nOTHER=1\n"

// setup is a sidecar for the four file forms against a fake server, its token file "good".
func setup(t *testing.T) (*Sidecar, *fakeServer, *server) {
	t.Helper()
	f, url := newFake(t, map[string]map[string]any{
		"web/db":  {"password": "s3cret", "env": dbEnv, "port": 5432},
		"web/tls": {"key_b64": base64.StdEncoding.EncodeToString([]byte("binary\x00data"))},
	})
	dir := t.TempDir()
	tok := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tok, []byte("good\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := &secretsconf.Config{
		Address: url, AuthMount: "kubernetes", Role: "node-web", TokenFile: tok, Dir: dir, PollSeconds: 1,
		ServiceContainer: "service",
		Files: []secretsconf.File{
			{Name: "db-password", Mount: "secret", Path: "web/db", Key: "password", Restart: true},
			{Name: "db-url", Mount: "secret", Path: "web/db", Key: "env", Variable: "DB_URL"},
			{Name: "tls.key", Mount: "secret", Path: "web/tls", Key: "key_b64", Encoding: "base64"},
			{Name: "app.conf", Mount: "secret", Path: "web/db", Template: "password={{ .password }} port={{ .port }}\n"},
		},
	}
	s := &Sidecar{Cfg: cfg, Log: io.Discard, kill: func(int, syscall.Signal) error {
		t.Error("a kill without a restart secret changed")
		return nil
	}}
	srv, err := newServer(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s, f, srv
}

func read(t *testing.T, dir, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestRoundWritesEveryForm: plain, variable, base64 and template files, read-only, one read
// per path, and check passes only after the round.
func TestRoundWritesEveryForm(t *testing.T) {
	s, f, srv := setup(t)
	if got := Check(s.Cfg); len(got) != 4 {
		t.Errorf("check before the round: missing %v, want all four", got)
	}
	if err := s.Round(context.Background(), srv); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"db-password": "s3cret",
		"db-url":      "postgres://db/app",
		"tls.key":     "binary\x00data",
		"app.conf":    "password=s3cret port=5432\n",
	}
	for name, w := range want {
		t.Run(name, func(t *testing.T) {
			if got := read(t, s.Cfg.Dir, name); got != w {
				t.Errorf("content %q, want %q", got, w)
			}
			fi, err := os.Stat(filepath.Join(s.Cfg.Dir, name))
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode().Perm() != 0o444 {
				t.Errorf("mode %v, want -r--r--r--", fi.Mode().Perm())
			}
		})
	}
	if got := Check(s.Cfg); len(got) != 0 {
		t.Errorf("check after the round: missing %v", got)
	}
	if f.reads != 2 || f.logins != 1 {
		t.Errorf("%d reads and %d logins, want 2 (one per path) and 1", f.reads, f.logins)
	}
	ents, _ := os.ReadDir(s.Cfg.Dir)
	if len(ents) != 4 {
		t.Errorf("the volume holds %d entries, want the 4 files (no temporary file left)", len(ents))
	}
}

// TestContentErrors: a missing key, variable or bad base64 names file and key, never a value.
func TestContentErrors(t *testing.T) {
	data := map[string]any{"k": "not base64 !", "env": "A=secretvalue\n"}
	tests := []struct {
		name string
		f    secretsconf.File
		want string
	}{
		{"missing key", secretsconf.File{Name: "f", Mount: "secret", Path: "p", Key: "nope"}, "file f: secret secret/p has no key nope"},
		{"missing variable", secretsconf.File{Name: "f", Mount: "secret", Path: "p", Key: "env", Variable: "B"}, "file f: key env of secret/p has no variable B"},
		{"bad base64", secretsconf.File{Name: "f", Mount: "secret", Path: "p", Key: "k", Encoding: "base64"}, "file f: key k of secret/p is not base64: illegal base64 data at input byte 9"},
		{"template key missing", secretsconf.File{Name: "f", Mount: "secret", Path: "p", Template: "{{ .nope }}"}, `file f: template line 1 col 3 at <.nope>: map has no entry for key "nope"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := content(tt.f, data)
			if err == nil || err.Error() != tt.want {
				t.Fatalf("error %v, want %q", err, tt.want)
			}
			if strings.Contains(err.Error(), "secretvalue") || strings.Contains(err.Error(), "not base64 !") {
				t.Errorf("the error shows a value: %v", err)
			}
		})
	}
}

// TestRewriteIsAtomic: a changed plain secret replaces the file by a rename (a reader holding
// the old file keeps its bytes) and stops nothing.
func TestRewriteIsAtomic(t *testing.T) {
	s, f, srv := setup(t)
	if err := s.Round(context.Background(), srv); err != nil {
		t.Fatal(err)
	}
	old, err := os.Open(filepath.Join(s.Cfg.Dir, "tls.key"))
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	f.set("web/tls", "key_b64", base64.StdEncoding.EncodeToString([]byte("new")))
	if err := s.Round(context.Background(), srv); err != nil {
		t.Fatal(err)
	}
	if got := read(t, s.Cfg.Dir, "tls.key"); got != "new" {
		t.Errorf("new content %q", got)
	}
	b, _ := io.ReadAll(old)
	if string(b) != "binary\x00data" {
		t.Errorf("a reader of the old file sees %q: the file was written in place", b)
	}
}

// TestRefusedReadFails: a secret the role may not read is an error with the server's words.
func TestRefusedReadFails(t *testing.T) {
	s, f, srv := setup(t)
	f.refused = true
	err := s.Round(context.Background(), srv)
	if err == nil || !strings.Contains(err.Error(), "file db-password: read secret/web/db: 403 permission denied") {
		t.Fatalf("error %v", err)
	}
	if got := Check(s.Cfg); len(got) != 4 {
		t.Errorf("files written after a refusal: missing only %v", got)
	}
}

// TestRunEndsOnFirstFailure: until every file is written once, an error ends Run with the
// server's reason (the container restarts and the rollout shows its log); a refused login too.
func TestRunEndsOnFirstFailure(t *testing.T) {
	s, f, _ := setup(t)
	f.refused = true
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Run(ctx); err == nil || !strings.Contains(err.Error(), "403 permission denied") {
		t.Errorf("run with a refused read: %v", err)
	}
	os.WriteFile(s.Cfg.TokenFile, []byte("another node's token"), 0o600)
	if err := s.Run(ctx); err == nil || !strings.Contains(err.Error(), "login to "+s.Cfg.Address+" as role node-web: 403 permission denied") {
		t.Errorf("run with a refused login: %v", err)
	}
}
