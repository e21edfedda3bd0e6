package devcluster

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// TestS3StartServes builds the S3 server (once; the dev cache keeps it), starts one of its own
// in a temporary directory (not the dev environment's) and lists its buckets as the root key
// pair of the credentials file, which is 0600 and is the only place the secret key is: the
// exports name the file, the process's command line holds no key.
func TestS3StartServes(t *testing.T) {
	ctx := context.Background()
	start := time.Now()
	bin, _, err := ensureTool(ctx, s3Tool.module, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("versitygw %s at %s (%s to build or find)", S3Version, bin, time.Since(start).Round(time.Second))
	testRunDir(t)
	dir := t.TempDir()
	for _, d := range []string{"pids", "logs"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	e := &Env{Dir: dir}
	start = time.Now()
	if err := e.startS3(ctx, bin, "127.0.0.1"); err != nil {
		t.Fatal(err)
	}
	t.Logf("S3 server answered %s after its start", time.Since(start).Round(10*time.Millisecond))
	t.Cleanup(func() {
		if !stopS3(dir) {
			t.Error("stopS3 found no server")
		}
	})
	fi, err := os.Stat(e.S3CredentialsFile)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("credentials %s: %v %v, want mode 0600", e.S3CredentialsFile, fi, err)
	}
	secret, err := s3RootSecret(e.S3CredentialsFile)
	if err != nil {
		t.Fatal(err)
	}
	ex := e.s3Exports()
	if !strings.Contains(ex, "SLIPWAY_S3_CREDENTIALS_FILE="+e.S3CredentialsFile) || strings.Contains(ex, secret) {
		t.Errorf("exports %q: want the credentials file, never the secret key", ex)
	}
	pid, _ := s3PID(dir)
	if cmdline, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline")); strings.Contains(string(cmdline), secret) {
		t.Error("the S3 server's command line holds the root secret key")
	}
	c, err := minio.New(strings.TrimPrefix(e.s3URL(s3Proc), "http://"), &minio.Options{Creds: credentials.NewStaticV4(s3RootAccess, secret, "")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.ListBuckets(ctx); err != nil {
		t.Errorf("list buckets as root: %v", err)
	}
	bad, _ := minio.New(strings.TrimPrefix(e.s3URL(s3Proc), "http://"), &minio.Options{Creds: credentials.NewStaticV4(s3RootAccess, "wrong"+secret, "")})
	if _, err := bad.ListBuckets(ctx); err == nil {
		t.Error("list buckets with a wrong secret key: no error")
	}
}

// Only dev up --central builds the S3 server: not the publishing parts, not the node.
func TestS3BuiltOnlyForCentral(t *testing.T) {
	for _, tl := range tools {
		if tl.central != (tl.module == s3Tool.module) || (tl.module == s3Tool.module && (!tl.own || tl.node || tl.secrets || tl.spire)) {
			t.Errorf("tool %s: central %v, own %v; want only versitygw, cached on its own", tl.module, tl.central, tl.own)
		}
	}
}
