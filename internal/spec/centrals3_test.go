package spec_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"slipway.dev/slipway/internal/spec"
)

func TestParseCentralS3(t *testing.T) {
	g, err := spec.Parse("slipway.yaml", []byte(spireDoc(
		"central:",
		"  s3:",
		"    keyPairs:",
		"      app: {}",
		"      backup:",
		"    buckets:",
		"      media: {owner: app, protect: true}",
	)), root)
	if err != nil {
		t.Fatal(err)
	}
	want := &spec.CentralS3{Line: 7,
		KeyPairs: []spec.CentralKeyPair{{Key: "app", Line: 8}, {Key: "backup", Line: 9}},
		Buckets:  []spec.CentralBucket{{Key: "media", Owner: "app", Protect: true, Line: 11}},
	}
	if d := cmp.Diff(want, g.Central.S3); d != "" {
		t.Errorf("central.s3 (-want +got):\n%s", d)
	}
}

func TestParseCentralS3Invalid(t *testing.T) {
	_, err := spec.Parse("slipway.yaml", []byte(spireDoc(
		"central:",
		"  s3:",
		"    keyPairs:",
		"      App: {}",
		"      b: {secret: hunter2}",
		"    buckets:",
		"      media: {owner: nobody}",
		"      logs: {protect: true}",
	)), root)
	var errs spec.Errors
	if !errors.As(err, &errs) {
		t.Fatalf("Parse = %v, want Errors", err)
	}
	var got []string
	for _, e := range errs {
		got = append(got, e.Error())
	}
	want := []string{
		`slipway.yaml:8: central.s3.keyPairs.App: name "App" is not a DNS label (lowercase letters, digits and '-', starting with a letter)`,
		`slipway.yaml:9: central.s3.keyPairs.b.secret: unknown field "secret"`,
		`slipway.yaml:11: central.s3.buckets.media.owner: "nobody" is not a key pair of central.s3.keyPairs`,
		`slipway.yaml:12: central.s3.buckets.logs.owner: is required: the key pair that owns the bucket`,
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("errors (-want +got):\n%s", d)
	}
}

// TestCentralBucketName: a whole name when it fits S3's 63 characters, else a shortened one
// whose last label starts with a digit (no key does), always a valid bucket name.
func TestCentralBucketName(t *testing.T) {
	long := "shop.front." + strings.Repeat("x", 50)
	for _, tc := range []struct{ identity, key, want string }{
		{"shop", "media", "shop.media"},
		{"shop.front.x7", "media", "shop.front.x7.media"},
		{long, "media", "shop.front.xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx.0"},
	} {
		got := spec.CentralBucketName(tc.identity, tc.key)
		if !strings.HasPrefix(got, tc.want) {
			t.Errorf("CentralBucketName(%q, %q) = %q, want prefix %q", tc.identity, tc.key, got, tc.want)
		}
		if len(got) > 63 || strings.Contains(got, "..") || strings.ContainsAny(got, "_ABCDEFGHIJKLMNOPQRSTUVWXYZ") {
			t.Errorf("CentralBucketName(%q, %q) = %q: not a bucket name", tc.identity, tc.key, got)
		}
	}
	if a, b := spec.CentralBucketName(long, "a"), spec.CentralBucketName(long, "b"); a == b || len(a) != 63 {
		t.Errorf("shortened names %q and %q: want distinct, 63 characters", a, b)
	}
}

// TestCentralBucketNamesOfNeighbours: deployments of one group chosen to collide (the group,
// a target named like a bucket, a deployment id with and without a target, a long identity
// shortened) never give two buckets or key pairs the same name.
func TestCentralBucketNamesOfNeighbours(t *testing.T) {
	long := "shop.front." + strings.Repeat("x", 50)
	seen := map[string]string{}
	for _, identity := range []string{"shop", "shop.front", "shop.media", "shop.all.x7", "shop.front.x7", "shop.media.x7", long} {
		for _, key := range []string{"front", "media", "x7", "all", "a", "b"} {
			n, who := spec.CentralBucketName(identity, key), identity+" "+key
			if other, ok := seen[n]; ok {
				t.Errorf("bucket %q of %s is also %s's", n, who, other)
			}
			seen[n] = who
		}
	}
}
