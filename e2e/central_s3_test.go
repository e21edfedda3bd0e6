package e2e

// Issue 44's S3 part against the dev environment's S3 server (the Versity S3 Gateway, dev up
// --central) and secrets server: the central lane makes a deployment's key pairs (users, their
// secret keys kept in its KV) and buckets (tagged with the deployment, owned by a key pair).

import (
	"bytes"
	"context"
	"io"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"github.com/minio/minio-go/v7/pkg/tags"

	"slipway.dev/slipway/internal/devcluster/devtest"
	"slipway.dev/slipway/internal/engine/central"
)

// s3Vars are the S3 server's variables: `slipway dev env`'s, or (an S3 server of one's own
// while the running environment has none) the test's environment's; a test fails without.
var s3Vars = []string{"SLIPWAY_S3_ENDPOINT", "SLIPWAY_S3_ADMIN_ENDPOINT", "SLIPWAY_S3_CREDENTIALS_FILE"}

type s3Server struct {
	vars           map[string]string
	access, secret string // the admin's
}

func realS3(t *testing.T) *s3Server {
	t.Helper()
	vars := devEnvExports(t, devtest.Env(t).Dir)
	if vars[s3Vars[0]] == "" {
		for _, k := range s3Vars {
			vars[k] = os.Getenv(k)
		}
	}
	for _, k := range s3Vars {
		if vars[k] == "" {
			t.Fatalf("the dev environment has no S3 server: `slipway dev env` exports no %s (start it with `slipway dev up --secrets --central`)", k)
		}
	}
	s := &s3Server{vars: vars}
	b, err := os.ReadFile(vars["SLIPWAY_S3_CREDENTIALS_FILE"])
	if err != nil {
		t.Fatal(err)
	}
	for l := range strings.Lines(string(b)) {
		k, v, _ := strings.Cut(strings.TrimSpace(l), "=")
		switch k {
		case "access_key":
			s.access = v
		case "secret_key":
			s.secret = v
		}
	}
	return s
}

func (s *s3Server) env() []string {
	var out []string
	for _, k := range s3Vars {
		out = append(out, k+"="+s.vars[k])
	}
	return out
}

// client is an S3 client of the key pair.
func (s *s3Server) client(t *testing.T, access, secret string) *minio.Client {
	t.Helper()
	u, err := url.Parse(s.vars["SLIPWAY_S3_ENDPOINT"])
	if err != nil {
		t.Fatal(err)
	}
	c, err := minio.New(u.Host, &minio.Options{Creds: credentials.NewStaticV4(access, secret, ""), Secure: u.Scheme == "https", BucketLookup: minio.BucketLookupPath})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func (s *s3Server) bucketExists(t *testing.T, name string) bool {
	t.Helper()
	ok, err := s.client(t, s.access, s.secret).BucketExists(context.Background(), name)
	if err != nil {
		t.Fatalf("bucket %s: %v", name, err)
	}
	return ok
}

// centralS3Group has one node, a key pair and two buckets it owns, one protected.
const centralS3Group = `group: {{GROUP}}
nodes:
  a:
    image: {rootfs: nodes/a/rootfs}
central:
  s3:
    keyPairs: {app: {}}
    buckets:
      media: {owner: app}
      vault: {owner: app, protect: {{PROTECT}}}
`

// TestCentralS3 applies two deployments (ids x1 and x2) of a group with a key pair and two
// buckets: each key pair, read from its deployment's KV, puts and gets an object in its own
// bucket and is refused on the other's; a second plan says No changes. and writes nothing; a
// protected bucket refuses destroy; destroy removes the buckets (objects included), users and
// entries; no secret key is in any output, state or plan file.
func TestCentralS3(t *testing.T) {
	t.Parallel()
	cs := realCentral(t)
	s3 := realS3(t)
	file := func(protect string) string { return strings.ReplaceAll(centralS3Group, "{{PROTECT}}", protect) }
	g := NewGroup(t, "central-s3", file("true"), "a")
	g.WithEnv(cs.env()...)
	g.WithEnv(s3.env()...)
	ctx := context.Background()
	ids := []string{"x1", "x2"}
	ident := func(id string) string { return g.Name + ".all." + id }
	t.Cleanup(func() {
		for _, id := range ids {
			_ = s3.client(t, s3.access, s3.secret).RemoveBucket(ctx, ident(id)+".media")
			_, _ = cs.srv.c.Logical().Delete("secret/metadata/slipway/" + ident(id) + "/s3/app")
		}
	})

	p := g.MustRun(2, "plan", "-detailed-exitcode", "--deployment-id", "x1", "-out", "x1.plan")
	for _, want := range []string{"key-pair " + ident("x1") + ".app", "bucket " + ident("x1") + ".media", "bucket " + ident("x1") + ".vault"} {
		if !strings.Contains(p.Stdout, want) {
			t.Errorf("plan does not show %q:\n%s", want, p.Stdout)
		}
	}
	g.MustRun(0, "apply", "--deployment-id", "x1", "x1.plan")
	g.MustRun(0, "apply", "--yes", "--deployment-id", "x2")

	secrets := map[string]string{"the S3 admin's secret key": s3.secret}
	clients := map[string]*minio.Client{}
	for _, id := range ids {
		kv, err := cs.srv.c.Logical().Read("secret/data/slipway/" + ident(id) + "/s3/app")
		if err != nil || kv == nil {
			t.Fatalf("%s's key pair in KV: %v", id, err)
		}
		data, _ := kv.Data["data"].(map[string]any)
		access, _ := data["access_key"].(string)
		secret, _ := data["secret_key"].(string)
		if access != ident(id)+".app" || len(secret) != 40 {
			t.Fatalf("%s's key pair in KV: access %q, a secret of %d characters", id, access, len(secret))
		}
		secrets[id+"'s secret key"] = secret
		clients[id] = s3.client(t, access, secret)
		tg, err := s3.client(t, s3.access, s3.secret).GetBucketTagging(ctx, ident(id)+".media")
		if err != nil || tg.ToMap()["slipway.dev/deployment"] != ident(id) {
			t.Errorf("%s's bucket's tags: %v, %v", id, tg, err)
		}
	}
	for _, id := range ids {
		bucket := ident(id) + ".media"
		body := "hello from " + id
		if _, err := clients[id].PutObject(ctx, bucket, "greeting", strings.NewReader(body), int64(len(body)), minio.PutObjectOptions{}); err != nil {
			t.Fatalf("%s's key pair puts into its bucket %s: %v", id, bucket, err)
		}
		o, err := clients[id].GetObject(ctx, bucket, "greeting", minio.GetObjectOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(o)
		if err != nil || string(got) != body {
			t.Errorf("%s's key pair reads %q, %v from its bucket; want %q", id, got, err, body)
		}
	}
	if _, err := io.ReadAll(mustObject(t, clients["x2"], ident("x1")+".media")); err == nil {
		t.Error("x2's key pair reads x1's bucket")
	}
	if _, err := clients["x2"].PutObject(ctx, ident("x1")+".media", "intruder", bytes.NewReader([]byte("x")), 1, minio.PutObjectOptions{}); err == nil {
		t.Error("x2's key pair writes into x1's bucket")
	}

	for _, id := range ids {
		if r := g.MustRun(0, "plan", "--deployment-id", id); !strings.Contains(r.Stdout, "No changes.") {
			t.Errorf("%s's second plan:\n%s", id, r.Stdout)
		}
	}

	// A protected bucket refuses destroy, which removes nothing.
	d := g.MustRun(1, "destroy", "--yes", "--deployment-id", "x1")
	if !strings.Contains(d.Stderr, "bucket(s) "+ident("x1")+".vault are protected") {
		t.Errorf("destroy with a protected bucket:\n%s", d)
	}
	if !s3.bucketExists(t, ident("x1")+".media") {
		t.Fatal("a refused destroy removed a bucket")
	}
	g.WriteFile("slipway.yaml", strings.ReplaceAll(file("false"), "{{GROUP}}", g.Name))
	g.MustRun(0, "apply", "--yes", "--deployment-id", "x1")
	pd := g.MustRun(0, "plan", "-destroy", "--deployment-id", "x1")
	for _, want := range []string{"key-pair " + ident("x1") + ".app", "bucket " + ident("x1") + ".media"} {
		if !strings.Contains(pd.Stdout, want) {
			t.Errorf("plan -destroy does not show %q:\n%s", want, pd.Stdout)
		}
	}
	g.MustRun(0, "destroy", "--yes", "--deployment-id", "x1")
	for _, b := range []string{".media", ".vault"} {
		if s3.bucketExists(t, ident("x1")+b) {
			t.Errorf("bucket %s stayed after destroy", ident("x1")+b)
		}
	}
	if _, err := clients["x1"].ListBuckets(ctx); err == nil {
		t.Error("x1's key pair still logs in after destroy")
	}
	if kv, _ := cs.srv.c.Logical().Read("secret/metadata/slipway/" + ident("x1") + "/s3/app"); kv != nil {
		t.Error("x1's key pair's KV entry stayed after destroy")
	}
	if !s3.bucketExists(t, ident("x2")+".media") {
		t.Error("x1's destroy removed x2's bucket")
	}
	if _, err := clients["x2"].StatObject(ctx, ident("x2")+".media", "greeting", minio.StatObjectOptions{}); err != nil {
		t.Errorf("x2's object after x1's destroy: %v", err)
	}
	// x2's state records its bucket vault protected: a file that drops the bucket, or drops
	// central:, is refused, and the bucket stays.
	noVault := strings.Replace(file("false"), "      vault: {owner: app, protect: false}\n", "", 1)
	noCentral := file("false")[:strings.Index(file("false"), "central:")]
	for what, f := range map[string]string{"the bucket vault": noVault, "central:": noCentral} {
		g.WriteFile("slipway.yaml", strings.ReplaceAll(f, "{{GROUP}}", g.Name))
		r := g.MustRun(1, "plan", "--deployment-id", "x2")
		if !strings.Contains(r.Stderr, "bucket(s) "+ident("x2")+".vault are no longer in the file but were last applied with protect") {
			t.Errorf("x2's plan of a file without %s:\n%s", what, r)
		}
	}
	if !s3.bucketExists(t, ident("x2")+".vault") {
		t.Error("a refused plan removed x2's protected bucket")
	}
	g.WriteFile("slipway.yaml", strings.ReplaceAll(file("false"), "{{GROUP}}", g.Name))
	g.MustRun(0, "destroy", "--yes", "--deployment-id", "x2")
	if s3.bucketExists(t, ident("x2")+".media") {
		t.Error("x2's bucket stayed after its destroy")
	}
	g.scanForValues(secrets)
}

func mustObject(t *testing.T, c *minio.Client, bucket string) io.Reader {
	t.Helper()
	o, err := c.GetObject(context.Background(), bucket, "greeting", minio.GetObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// TestCentralS3Foreign: a bucket of the deployment's name that someone else made (no tag, or
// another deployment's), and a user of its key pair's name with another secret key, stop the
// plan, which names them; nothing is changed.
func TestCentralS3Foreign(t *testing.T) {
	t.Parallel()
	cs := realCentral(t)
	s3 := realS3(t)
	g := NewGroup(t, "central-s3f", strings.ReplaceAll(centralS3Group, "{{PROTECT}}", "false"), "a")
	g.WithEnv(cs.env()...)
	g.WithEnv(s3.env()...)
	ctx := context.Background()
	admin := s3.client(t, s3.access, s3.secret)
	bucket := g.Name + ".media"
	if err := admin.MakeBucket(ctx, bucket, minio.MakeBucketOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = admin.RemoveBucket(ctx, bucket) })
	r := g.MustRun(1, "plan")
	if !strings.Contains(r.Stderr, "S3 bucket "+bucket+" exists and is not this deployment's (it has no slipway mark)") {
		t.Errorf("plan with a foreign bucket:\n%s", r)
	}
	other, err := tags.NewTags(map[string]string{"slipway.dev/deployment": g.Name + ".all.zz"}, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := admin.SetBucketTagging(ctx, bucket, other); err != nil {
		t.Fatal(err)
	}
	r = g.MustRun(1, "plan")
	if !strings.Contains(r.Stderr, "S3 bucket "+bucket+" exists and is not this deployment's (it is marked slipway.dev/deployment="+g.Name+".all.zz)") {
		t.Errorf("plan with another deployment's bucket:\n%s", r)
	}
	if kv, _ := cs.srv.c.Logical().Read("secret/metadata/slipway/" + g.Name + "/s3/app"); kv != nil {
		t.Error("a plan that stopped wrote the key pair's KV entry")
	}

	// A user of the key pair's name made by someone else (its secret key is in no entry of
	// the deployment's) stops the plan too; the bucket is gone, so the user is what stops it.
	if err := admin.RemoveBucket(ctx, bucket); err != nil {
		t.Fatal(err)
	}
	ac, err := central.NewS3Client(s3.vars["SLIPWAY_S3_ENDPOINT"], s3.vars["SLIPWAY_S3_ADMIN_ENDPOINT"], s3.access, s3.secret, "us-east-1")
	if err != nil {
		t.Fatal(err)
	}
	user := g.Name + ".app"
	if err := ac.CreateUser(ctx, user, "someone-elses-secret-key"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ac.DeleteUser(ctx, user) })
	r = g.MustRun(1, "plan")
	if !strings.Contains(r.Stderr, "S3 user "+user+" exists and is not this deployment's (it has a secret key the deployment's KV entry does not hold)") {
		t.Errorf("plan with a foreign user:\n%s", r)
	}
	g.scanForValues(map[string]string{"the foreign user's secret key": "someone-elses-secret-key"})
}
