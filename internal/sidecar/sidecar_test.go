package sidecar

import (
	"context"
	"encoding/base64"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

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
		Companion: "/bin/companion",
		Files: []secretsconf.File{
			{Name: "db-password", Mount: "secret", Path: "web/db", Key: "password", Restart: true},
			{Name: "db-url", Mount: "secret", Path: "web/db", Key: "env", Variable: "DB_URL"},
			{Name: "tls.key", Mount: "secret", Path: "web/tls", Key: "key_b64", Encoding: "base64"},
			{Name: "app.conf", Mount: "secret", Path: "web/db", Template: "password={{ .password }} port={{ .port }}\n"},
		},
	}
	s := &Sidecar{Cfg: cfg, Log: io.Discard, Self: "/slipway-secrets", kill: func(int, syscall.Signal) error {
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

// service starts a stand-in for the service: a copy of sleep under a name of its own, so that
// its argv[0] is unique on this machine.
func service(t *testing.T) (*exec.Cmd, string) {
	t.Helper()
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(sleep)
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "service-under-test")
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd, bin
}

// waitTerm waits for cmd to end and wants SIGTERM as the cause.
func waitTerm(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
		ws := cmd.ProcessState.Sys().(syscall.WaitStatus)
		if !ws.Signaled() || ws.Signal() != syscall.SIGTERM {
			t.Errorf("the service ended with %v, want SIGTERM", cmd.ProcessState)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the service was not stopped")
	}
}

// TestRestartStopsServiceByCommand: a changed restart secret sends SIGTERM to the process of
// the service's command, and only after a change, not on the first write.
func TestRestartStopsServiceByCommand(t *testing.T) {
	s, f, srv := setup(t)
	cmd, bin := service(t)
	s.Cfg.Service, s.kill = bin, nil
	if err := s.Round(context.Background(), srv); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Process.Signal(syscall.Signal(0)); err != nil {
		t.Fatalf("the first write stopped the service: %v", err)
	}
	f.set("web/db", "password", "rotated")
	if err := s.Round(context.Background(), srv); err != nil {
		t.Fatal(err)
	}
	waitTerm(t, cmd)
	if got := read(t, s.Cfg.Dir, "db-password"); got != "rotated" {
		t.Errorf("db-password %q", got)
	}
	if exists(s.Cfg.Dir, pendingRestart) {
		t.Error("the restart mark stays after the stop")
	}
}

// TestChangeWhileDown: a sidecar that starts on a volume with an older value of a restart
// secret (changed while it was down) stops the service; so does one that finds the restart
// mark a dead sidecar left.
func TestChangeWhileDown(t *testing.T) {
	for _, tt := range []struct {
		name    string
		prepare func(t *testing.T, dir string)
	}{
		{"older value on the volume", func(t *testing.T, dir string) {
			writeAtomic(dir, "db-password", []byte("before"))
		}},
		{"restart mark left", func(t *testing.T, dir string) {
			for name, v := range map[string]string{"db-password": "s3cret", "db-url": "postgres://db/app", "tls.key": "binary\x00data", "app.conf": "password=s3cret port=5432\n"} {
				writeAtomic(dir, name, []byte(v))
			}
			markPending(dir, true)
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, _, srv := setup(t)
			cmd, bin := service(t)
			s.Cfg.Service, s.kill = bin, nil
			tt.prepare(t, s.Cfg.Dir)
			if err := s.Round(context.Background(), srv); err != nil {
				t.Fatal(err)
			}
			waitTerm(t, cmd)
		})
	}
}

// TestTargets: what a restart stops in a pod's PID namespace: never PID 1, the sidecar (nor
// its probe) or the companion; by command only the top of the service's tree.
func TestTargets(t *testing.T) {
	root := t.TempDir()
	for _, p := range []struct {
		pid, ppid int
		argv0     string
	}{
		{1, 0, "/pause"},
		{7, 0, "/slipway-secrets"},
		{9, 0, "/usr/bin/app"},
		{10, 9, "/usr/bin/app"},   // a worker of the service: its parent is stopped
		{11, 9, "/usr/bin/other"}, // a child of the service
		{12, 0, "/bin/companion"},
		{13, 12, "/usr/bin/app"}, // the companion's child of the same name
		{14, 0, "/slipway-secrets"},
	} {
		dir := filepath.Join(root, itoa(p.pid))
		os.MkdirAll(dir, 0o755)
		os.WriteFile(filepath.Join(dir, "cmdline"), []byte(p.argv0+"\x00arg\x00"), 0o644)
		os.WriteFile(filepath.Join(dir, "stat"), []byte(itoa(p.pid)+" (a name) with) S "+itoa(p.ppid)+" 1 1 0"), 0o644)
	}
	os.MkdirAll(filepath.Join(root, "self"), 0o755)
	tests := []struct {
		name    string
		service string
		want    []int
	}{
		{"by command", "/usr/bin/app", []int{9}},
		{"without command: the top-level processes", "", []int{9}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var killed []int
			p := procs{root: root, self: 7, kill: func(pid int, sig syscall.Signal) error {
				if sig != syscall.SIGTERM {
					t.Errorf("signal %v", sig)
				}
				killed = append(killed, pid)
				return nil
			}}
			if _, err := p.stop(tt.service, "/bin/companion", "/slipway-secrets"); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, killed); diff != "" {
				t.Errorf("stopped (-want +got):\n%s", diff)
			}
		})
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

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
