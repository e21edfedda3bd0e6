package e2e

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/minio/minio-go/v7"
)

// centralS3RealGroup is a service node on the real node whose sidecar writes its key pair of
// central.s3 (one file per key), and the bucket the key pair owns.
const centralS3RealGroup = `group: {{GROUP}}
defaults:
  init: none
  rolloutTimeout: 2m
  {{REAL}}
nodes:
  a:
    image: {rootfs: nodes/a/rootfs, command: [/bin/sleep, "1000000"]}
    secretsFrom:
      openbao: {address: "{{ADDR}}", {{CA}}role: {{GROUP}}-a, pollInterval: 1s}
    roles:
      svc:
        service: {image: {archive: build/svc.tar, command: [/usr/sbin/httpd, -f, -p, "8080", -h, /tmp]}}
        probes: {startup: {tcp: 8080}}
        sidecarSecrets:
          s3-access: {s3KeyPair: app, key: access_key}
          s3-secret: {s3KeyPair: app, key: secret_key}
central:
  s3:
    keyPairs: {app: {}}
    buckets: {media: {owner: app}}
`

// buildS3Object builds testdata/s3object, a static S3 client, for the service image.
func buildS3Object(t *testing.T, dir string) string {
	t.Helper()
	out := filepath.Join(dir, "s3object")
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", out, "./testdata/s3object")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build testdata/s3object: %v\n%s", err, b)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestRealCentralS3: a pod on the real node reads its deployment's key pair through the
// secrets sidecar (sidecarSecrets.<file>.s3KeyPair) and, from inside the pod, puts an object
// into the deployment's bucket and reads it back: the S3 server is reachable from the real
// node's pods and the files hold a key pair it takes. A second plan says No changes; no
// secret key is in any output, state, plan file, event or object; destroy removes the bucket.
func TestRealCentralS3(t *testing.T) {
	t.Parallel()
	cs := realCentral(t)
	s3 := realS3(t)
	srv := cs.srv
	tmpl := strings.ReplaceAll(centralS3RealGroup, "{{ADDR}}", srv.Addr)
	g, node := NewRealGroup(t, "real-s3", tmpl, "a")
	g.realWriteGroup(strings.ReplaceAll(tmpl, "{{CA}}", g.writeCA(srv)))
	g.WithEnv(cs.env()...)
	g.WithEnv(s3.env()...)
	g.writeServiceArchiveWith("svc.tar", `sleep 1000000`, nil, map[string]string{"bin/s3object": buildS3Object(t, t.TempDir())})
	id := g.Name
	bucket := id + ".media"
	ctx := context.Background()
	admin := s3.client(t, s3.access, s3.secret)
	t.Cleanup(func() {
		_ = admin.RemoveObject(ctx, bucket, "greeting", minio.RemoveObjectOptions{})
		_ = admin.RemoveBucket(ctx, bucket)
		_, _ = srv.c.Logical().Delete("secret/metadata/slipway/" + id + "/s3/app")
	})
	// What an operator writes: node a may read its key pair's entry.
	role := g.Name + "-a"
	if err := srv.c.Sys().PutPolicy(role, `path "secret/data/slipway/`+id+`/s3/app" { capabilities = ["read"] }`+"\n"); err != nil {
		t.Fatal(err)
	}
	srv.role(t, role, "node-a", g.Name, "openbao", role)

	g.MustRun(0, "apply", "--yes")
	pod := g.realPod("a-svc", node)
	access := g.serviceFile(pod.Name, "s3-access")
	secret := g.serviceFile(pod.Name, "s3-secret")
	if access != id+".app" || len(secret) != 40 {
		t.Fatalf("files: access key %q, a secret key of %d characters; want %s.app and 40", access, len(secret), id)
	}
	const body = "hello from the real node's pod"
	out, ok := g.execIn(pod.Name, "service", "/bin/s3object", s3.vars["SLIPWAY_S3_ENDPOINT"], bucket, "greeting", body)
	if !ok || out != body {
		t.Fatalf("the pod's put and get with its key pair: ok %v, output %q", ok, out)
	}
	o, err := admin.GetObject(ctx, bucket, "greeting", minio.GetObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := io.ReadAll(o); err != nil || string(got) != body {
		t.Errorf("the object the pod put, read by the admin: %q, %v", got, err)
	}

	if r := g.MustRun(0, "plan", "-detailed-exitcode"); !strings.Contains(r.Stdout, "No changes.") {
		t.Errorf("second plan:\n%s", r.Stdout)
	}
	g.MustRun(0, "plan", "-out", "saved.plan")
	g.scanForValues(map[string]string{"the key pair's secret key": secret, "the S3 admin's secret key": s3.secret, "the server's token": srv.Token})
	g.MustRun(0, "destroy", "--yes")
	if s3.bucketExists(t, bucket) {
		t.Errorf("bucket %s stayed after destroy", bucket)
	}
}
