package devcluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// The dev environment's S3 server (dev up --central, issue 44): the Versity S3 Gateway, a real
// S3 server with an admin API (users, buckets and their owners), built from the Go module
// proxy (tools/versitygw pins it) and cached like the secrets server. MinIO builds from the
// proxy too, but took about an hour on the shared 2-core machine and 150 MB; versitygw about 2
// minutes and 83 MB. It serves the posix backend in <dir>/s3/data with its IAM in
// <dir>/s3/iam, on two ports of its own (S3 and admin API), where PostgreSQL listens
// (loopback and the real node's bridge, so that pods reach it). Its root key pair is made on
// the first start and kept only in the 0600 file <dir>/s3/credentials.
const (
	S3Version    = "v1.8.0"
	s3Module     = "github.com/versity/versitygw"
	s3Proc       = "versitygw"       // pids/versitygw, logs/versitygw.log, the S3 API's port
	s3AdminPort  = "versitygw-admin" // the admin API's port
	s3RootAccess = "slipway-dev-root"
)

// s3Tool builds the S3 server, only for dev up --central (not with the publishing parts).
var s3Tool = tool{
	module:  "versitygw",
	from:    s3Module + " " + S3Version,
	pkgs:    []string{s3Module + "/cmd/versitygw"},
	bins:    []string{"versitygw"},
	ldflags: "-s -w",
	own:     true,
	central: true,
}

// s3Part is the S3 server of the central services (s3.go), a part of its own beside
// PostgreSQL's, so that dev down stops it and dev env exports it on its own line.
type s3Part struct{}

func (s3Part) wanted(o Options) bool { return o.Central }

func (s3Part) prepare(ctx context.Context, run *upRun) (err error) {
	run.s3Bin, _, err = ensureTool(ctx, s3Tool.module, run.opts.Progress)
	return err
}

func (s3Part) ensure(ctx context.Context, e *Env, run *upRun) error {
	return e.ensureS3(ctx, run.s3Bin, run.opts.Progress)
}

func (s3Part) stop(dir, _ string) bool { return stopS3(dir) }
func (s3Part) exports(e *Env) string   { return e.s3Exports() }

// s3PID is the PID of the running S3 server of the environment in dir.
func s3PID(dir string) (int, bool) {
	pid, err := readPID(filepath.Join(dir, "pids", s3Proc))
	if err != nil || !alive(pid) {
		return 0, false
	}
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	return pid, err == nil && strings.TrimSuffix(filepath.Base(exe), " (deleted)") == "versitygw"
}

// ensureS3 starts the S3 server unless it runs where it should.
func (e *Env) ensureS3(ctx context.Context, bin string, progress io.Writer) error {
	host := e.secretsHost()
	pid, running := s3PID(e.Dir)
	if running && e.S3Host != host {
		stopPID(pid, 20*time.Second)
		running = false
	}
	if running {
		return nil
	}
	start := time.Now()
	if err := e.startS3(ctx, bin, host); err != nil {
		return err
	}
	fmt.Fprintf(progress, "dev: S3 server (versitygw %s) ready in %s at %s\n", S3Version, time.Since(start).Round(100*time.Millisecond), e.s3URL(s3Proc))
	return e.save()
}

func (e *Env) startS3(ctx context.Context, bin, host string) error {
	if e.Ports[s3Proc] == 0 || e.Ports[s3AdminPort] == 0 {
		p, err := freePorts(2)
		if err != nil {
			return err
		}
		if e.Ports == nil {
			e.Ports = map[string]int{}
		}
		e.Ports[s3Proc], e.Ports[s3AdminPort] = p[0], p[1]
	}
	dir := filepath.Join(e.Dir, "s3")
	for _, d := range []string{"data", "iam"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o700); err != nil {
			return err
		}
	}
	creds := filepath.Join(dir, "credentials")
	secret, err := s3RootSecret(creds)
	if err != nil {
		return err
	}
	if host != "127.0.0.1" { // the real node's bridge (secretsHost)
		if err := e.ensureBridge(); err != nil {
			return err
		}
	}
	args := []string{"--quiet"}
	for _, h := range uniq("127.0.0.1", host) {
		args = append(args, "--port", net.JoinHostPort(h, strconv.Itoa(e.Ports[s3Proc])),
			"--admin-port", net.JoinHostPort(h, strconv.Itoa(e.Ports[s3AdminPort])))
	}
	args = append(args, "--iam-dir", filepath.Join(dir, "iam"), "posix", filepath.Join(dir, "data"))
	// The root key pair through the environment, never the command line (ps shows that).
	if _, err := e.startExec(s3Proc, bin, args, "ROOT_ACCESS_KEY="+s3RootAccess, "ROOT_SECRET_KEY="+secret); err != nil {
		return err
	}
	e.S3Host, e.S3CredentialsFile = host, creds
	// Ready when the S3 API answers: an unsigned request is refused (403), which only a
	// listening server says.
	url := "http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(e.Ports[s3Proc])) + "/"
	return waitFor(ctx, 60*time.Second, "the S3 server answers", func() (bool, string) {
		if _, ok := s3PID(e.Dir); !ok {
			return false, "not running; its log: " + logTail(filepath.Join(e.Dir, "logs", s3Proc+".log"), 5)
		}
		resp, err := http.Get(url)
		if err != nil {
			return false, err.Error()
		}
		resp.Body.Close()
		return true, ""
	})
}

// s3RootSecret returns the root secret key the file creds holds, making both on the first
// start: access_key=… and secret_key=… lines, mode 0600 (SLIPWAY_S3_CREDENTIALS_FILE).
func s3RootSecret(creds string) (string, error) {
	if b, err := os.ReadFile(creds); err == nil {
		for l := range strings.Lines(string(b)) {
			if v, ok := strings.CutPrefix(strings.TrimSpace(l), "secret_key="); ok && v != "" {
				return v, nil
			}
		}
		return "", fmt.Errorf("dev environment: S3: %s has no secret_key= line (remove it to make a new root key with an empty %s)", creds, filepath.Dir(creds))
	}
	b := make([]byte, 20)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	secret := hex.EncodeToString(b)
	return secret, writeSecretFile(creds, "access_key="+s3RootAccess+"\nsecret_key="+secret+"\n")
}

func (e *Env) s3URL(port string) string {
	return "http://" + net.JoinHostPort(e.S3Host, strconv.Itoa(e.Ports[port]))
}

// s3Exports is the line of Exports for the S3 server: its two endpoints and the file with
// the root key pair, never the key itself.
func (e *Env) s3Exports() string {
	if e.S3Host == "" {
		return ""
	}
	return fmt.Sprintf("export SLIPWAY_S3_ENDPOINT=%s SLIPWAY_S3_ADMIN_ENDPOINT=%s SLIPWAY_S3_CREDENTIALS_FILE=%s\n",
		e.s3URL(s3Proc), e.s3URL(s3AdminPort), e.S3CredentialsFile)
}

// stopS3 stops the S3 server of the environment in dir; it reports whether one ran. Its
// data and IAM go with the directory.
func stopS3(dir string) bool {
	pid, ok := s3PID(dir)
	_ = os.Remove(filepath.Join(dir, "pids", s3Proc))
	if !ok {
		return false
	}
	stopPID(pid, 20*time.Second)
	return true
}
