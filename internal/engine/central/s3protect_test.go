package central

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/spec"
)

// protectedBucketLane is testS3Lane with its bucket applied protected and the state's record
// of it, as the engine writes it (ProtectedBucketKeys).
func protectedBucketLane(t *testing.T) (*Lane, *fakeBao, *fakeS3) {
	t.Helper()
	l, b, s := testS3Lane(true)
	planApply(t, l)
	rec, err := Recorded("database", "postgresql", "secret", nil, ProtectedBucketKeys(l.Central))
	if err != nil {
		t.Fatal(err)
	}
	l.Recorded = rec
	return l, b, s
}

// TestS3ProtectedBucketDropped: a bucket the state records protected is refused, not
// removed, when the file drops it or drops `central:`; --keep-claims keeps it; an edited
// saved plan that removes it is refused too.
func TestS3ProtectedBucketDropped(t *testing.T) {
	ctx := context.Background()
	const removed = "central: bucket(s) shop.x7.media are no longer in the file but were last applied with protect (the state records central.s3.buckets.<bucket>.protect): slipway removes none of the central objects; put them back with protect unset and apply, then remove them, or apply with --keep-claims, which keeps the buckets"

	l, b, s := protectedBucketLane(t)
	l.Central.S3.Buckets = nil // the file drops the bucket, keeps its key pair
	writes := s.writes + b.writes
	var pe *ProtectedBucketsError
	if _, err := l.Plan(ctx, false); !errors.As(err, &pe) || err.Error() != removed {
		t.Errorf("plan of a file without the protected bucket: %v", err)
	}
	p, err := l.Plan(ctx, true)
	if err != nil || len(p.Changes) != 0 || len(p.Notes) != 1 {
		t.Errorf("the same with --keep-claims: %v, notes %v, %v", summary(p.Changes), p.Notes, err)
	}
	err = l.Apply(ctx, []plan.CentralChange{{What: plan.CentralBucket, Name: "shop.x7.media", Action: plan.Delete}})
	if !errors.As(err, &pe) {
		t.Errorf("a saved plan edited to remove the recorded bucket: %v", err)
	}
	if _, ok := s.buckets["shop.x7.media"]; !ok || s.writes+b.writes != writes {
		t.Errorf("the refused runs wrote %d times; bucket there %v", s.writes+b.writes-writes, ok)
	}

	// The file drops central: the lane is the record's.
	rl := testLane(l.Recorded, "shop.x7", l.PG.(*fakePG), b)
	rl.Recorded, rl.S3 = l.Recorded, s
	if _, err := rl.PlanRetire(ctx, false); !errors.As(err, &pe) || err.Error() != removed {
		t.Errorf("plan of a file without central: %v", err)
	}
	if _, err := rl.PlanDestroy(ctx, false); !errors.As(err, &pe) || !pe.Removed {
		t.Errorf("destroy of a file without central: %v", err)
	}
	if _, ok := s.buckets["shop.x7.media"]; !ok {
		t.Error("the bucket was removed")
	}
}

// TestS3ProtectRecorded: a file's protect that the state does not record (or records the
// other way) is a change, so that apply records it; once recorded as lifted, the bucket the
// file drops goes.
func TestS3ProtectRecorded(t *testing.T) {
	ctx := context.Background()
	l, _, s := protectedBucketLane(t)
	l.Central.S3.Buckets[0].Protect = false
	p, err := l.Plan(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"update bucket shop.x7.media"}, summary(p.Changes)); d != "" || p.Changes[0].Reason != "protect lifted in the state (it was recorded)" {
		t.Errorf("plan with protect unset (-want +got):\n%s%v", d, p.Changes)
	}
	if err := l.Apply(ctx, p.Changes); err != nil || s.buckets["shop.x7.media"] != "shop.x7.app" {
		t.Fatalf("apply of it: %v, owner %q", err, s.buckets["shop.x7.media"])
	}
	l.Recorded, _ = Recorded("database", "postgresql", "secret", nil, ProtectedBucketKeys(l.Central))
	if p, err = l.Plan(ctx, false); err != nil || len(p.Changes) != 0 {
		t.Errorf("plan after the record: %v, %v", summary(p.Changes), err)
	}
	l.Central.S3.Buckets[0].Protect = true
	if p, err = l.Plan(ctx, false); err != nil || len(p.Changes) != 1 || p.Changes[0].Reason != "protect recorded in the state (it was not)" {
		t.Errorf("plan with protect set again: %v, %v", p.Changes, err)
	}
	l.Central.S3.Buckets = nil
	if p, err = l.Plan(ctx, false); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"delete bucket shop.x7.media"}, summary(p.Changes)); d != "" {
		t.Errorf("plan without the bucket, protect lifted in the record (-want +got):\n%s", d)
	}
}

// TestS3RecordedBucketChecked: a state's record is checked like the file.
func TestS3RecordedBucketChecked(t *testing.T) {
	if _, err := Recorded("database", "postgresql", "secret", nil, []string{"../x"}); err == nil ||
		err.Error() != `central: the state's record of the lane: protected bucket "../x" is not a DNS label` {
		t.Errorf("Recorded with a bad bucket: %v", err)
	}
	c, err := Recorded("database", "postgresql", "secret", nil, []string{"media"})
	if err != nil || c.S3 == nil || !cmp.Equal(c.S3.Buckets, []spec.CentralBucket{{Key: "media", Protect: true}}) {
		t.Errorf("Recorded: %+v, %v", c, err)
	}
}
