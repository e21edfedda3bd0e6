package central

import (
	"context"
	"errors"
	"maps"
	"testing"

	"github.com/google/go-cmp/cmp"

	"slipway.dev/slipway/internal/spec"
)

// fakeS3 is a stand-in for the S3 server's admin and S3 APIs: users, buckets with their owner
// and tags (e2e/central_s3_test.go runs the lane against the real Versity S3 Gateway).
type fakeS3 struct {
	users   map[string]string
	buckets map[string]string
	tags    map[string]map[string]string
	writes  int
}

func newFakeS3() *fakeS3 {
	return &fakeS3{users: map[string]string{}, buckets: map[string]string{}, tags: map[string]map[string]string{}}
}

func (f *fakeS3) Users(context.Context) (map[string]string, error) { return maps.Clone(f.users), nil }
func (f *fakeS3) Buckets(context.Context) (map[string]string, error) {
	return maps.Clone(f.buckets), nil
}
func (f *fakeS3) BucketTags(_ context.Context, b string) (map[string]string, error) {
	return maps.Clone(f.tags[b]), nil
}
func (f *fakeS3) CreateUser(_ context.Context, access, secret string) error {
	f.writes++
	if _, ok := f.users[access]; ok {
		return ErrUserExists
	}
	f.users[access] = secret
	return nil
}
func (f *fakeS3) DeleteUser(_ context.Context, access string) error {
	f.writes++
	delete(f.users, access)
	return nil
}
func (f *fakeS3) CreateBucket(_ context.Context, b, owner string, tags map[string]string) error {
	f.writes++
	if _, ok := f.buckets[b]; ok {
		return errString("BucketAlreadyExists")
	}
	f.buckets[b], f.tags[b] = owner, maps.Clone(tags)
	return nil
}
func (f *fakeS3) SetBucketOwner(_ context.Context, b, owner string) error {
	f.writes++
	f.buckets[b] = owner
	return nil
}
func (f *fakeS3) RemoveBucket(_ context.Context, b string) error {
	f.writes++
	delete(f.buckets, b)
	delete(f.tags, b)
	return nil
}

func testS3Lane(protect bool) (*Lane, *fakeBao, *fakeS3) {
	c := &spec.Central{DatabaseMount: "database", Connection: "postgresql", KVMount: "secret",
		S3: &spec.CentralS3{KeyPairs: []spec.CentralKeyPair{{Key: "app"}},
			Buckets: []spec.CentralBucket{{Key: "media", Owner: "app", Protect: protect}}}}
	b, s := newFakeBao(), newFakeS3()
	l := testLane(c, "shop.x7", newFakePG(), b)
	l.S3 = s
	return l, b, s
}

func planApply(t *testing.T, l *Lane) []string {
	t.Helper()
	p, err := l.Plan(context.Background(), false)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Apply(context.Background(), p.Changes); err != nil {
		t.Fatal(err)
	}
	return summary(p.Changes)
}

// TestS3PlanApply: the key pair's secret key is made once, in KV, and is the user's; the
// bucket has the deployment's tag and the pair as owner; a second plan has nothing to do; a
// user removed behind slipway's back is made again with the kept secret key, never a new one.
func TestS3PlanApply(t *testing.T) {
	ctx := context.Background()
	l, b, s := testS3Lane(false)
	if d := cmp.Diff([]string{"create key-pair shop.x7.app", "create bucket shop.x7.media"}, planApply(t, l)); d != "" {
		t.Fatalf("first plan (-want +got):\n%s", d)
	}
	pr, err := l.readPair(ctx, "app")
	if err != nil || !pr.stored || len(pr.secret) != spec.CentralS3SecretLength || s.users["shop.x7.app"] != pr.secret {
		t.Fatalf("key pair: stored %v, a secret of %d characters, the user's %v (%v)", pr.stored, len(pr.secret), s.users["shop.x7.app"] == pr.secret, err)
	}
	if ownerOf(b.paths["secret/metadata/slipway/shop.x7/s3/app"]) != "shop.x7" {
		t.Error("the key pair's KV entry has no mark")
	}
	if s.buckets["shop.x7.media"] != "shop.x7.app" || s.tags["shop.x7.media"][spec.CentralS3Tag] != "shop.x7" {
		t.Errorf("bucket: owner %q, tags %v", s.buckets["shop.x7.media"], s.tags["shop.x7.media"])
	}
	writes := s.writes + b.writes
	if got := planApply(t, l); len(got) != 0 || s.writes+b.writes != writes {
		t.Errorf("second plan %v, %d writes; want none", got, s.writes+b.writes-writes)
	}
	delete(s.users, "shop.x7.app")
	if d := cmp.Diff([]string{"create key-pair shop.x7.app"}, planApply(t, l)); d != "" {
		t.Errorf("plan after the user went (-want +got):\n%s", d)
	}
	if s.users["shop.x7.app"] != pr.secret {
		t.Error("the user made again has another secret key than the one kept in KV")
	}
	s.buckets["shop.x7.media"] = "someone"
	if d := cmp.Diff([]string{"update bucket shop.x7.media"}, planApply(t, l)); d != "" || s.buckets["shop.x7.media"] != "shop.x7.app" {
		t.Errorf("plan after the owner changed (-want +got):\n%s", d)
	}
}

// TestS3Conflicts: a user of the pair's name whose secret key is not the KV entry's, and a
// bucket of the deployment's name without its tag, stop the plan.
func TestS3Conflicts(t *testing.T) {
	ctx := context.Background()
	l, _, s := testS3Lane(false)
	s.users["shop.x7.app"] = "someone-elses"
	var ce *ConflictError
	if _, err := l.Plan(ctx, false); !errors.As(err, &ce) || ce.Error() != "central: S3 user shop.x7.app exists and is not this deployment's (it has a secret key the deployment's KV entry does not hold): someone else's object of the same name; slipway changes nothing until it is renamed or removed" {
		t.Errorf("plan with a foreign user: %v", err)
	}
	l, _, s = testS3Lane(false)
	s.buckets["shop.x7.media"], s.tags["shop.x7.media"] = "x", map[string]string{spec.CentralS3Tag: "shop.x8"}
	if _, err := l.Plan(ctx, false); !errors.As(err, &ce) || ce.Error() != "central: S3 bucket shop.x7.media exists and is not this deployment's (it is marked slipway.dev/deployment=shop.x8): someone else's object of the same name; slipway changes nothing until it is renamed or removed" {
		t.Errorf("plan with another deployment's bucket: %v", err)
	}
}

// TestS3Destroy: a protected bucket refuses destroy; --keep-claims keeps the buckets and their
// owners; otherwise the bucket, the user and the KV entry go, and another's bucket stays.
func TestS3Destroy(t *testing.T) {
	ctx := context.Background()
	l, b, s := testS3Lane(true)
	planApply(t, l)
	s.buckets["shop.x8.media"], s.tags["shop.x8.media"] = "shop.x8.app", map[string]string{spec.CentralS3Tag: "shop.x8"}
	var pe *ProtectedBucketsError
	if _, err := l.PlanDestroy(ctx, false); !errors.As(err, &pe) {
		t.Fatalf("destroy of a protected bucket: %v", err)
	}
	p, err := l.PlanDestroy(ctx, true)
	if err != nil || len(p.Changes) != 0 || len(p.Notes) != 1 {
		t.Fatalf("destroy --keep-claims: %v, %v, %v", summary(p.Changes), p.Notes, err)
	}
	l.Central.S3.Buckets[0].Protect = false
	if p, err = l.PlanDestroy(ctx, false); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"delete bucket shop.x7.media", "delete key-pair shop.x7.app"}, summary(p.Changes)); d != "" {
		t.Fatalf("destroy (-want +got):\n%s", d)
	}
	if err := l.Apply(ctx, p.Changes); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.buckets["shop.x7.media"]; ok || len(s.users) != 0 || b.paths["secret/metadata/slipway/shop.x7/s3/app"] != nil {
		t.Errorf("after destroy: buckets %v, users %d, KV entry %v", s.buckets, len(s.users), b.paths["secret/metadata/slipway/shop.x7/s3/app"])
	}
	if _, ok := s.buckets["shop.x8.media"]; !ok {
		t.Error("destroy removed another deployment's bucket")
	}
}
