package central

import (
	"fmt"
	"slices"
	"strings"

	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/spec"
)

// Protected buckets are judged as protected databases are (retire.go): as the file says, and
// a bucket the file no longer has (or a file without `central:`) as the state records it last
// applied, so that dropping a protected bucket from the file never removes it.

// ProtectedBucketsError is destroy refused by a protected bucket (central.s3.buckets.<b>.protect),
// or, Removed, the removal of one the file no longer has and the state records protected.
type ProtectedBucketsError struct {
	Buckets []string
	Removed bool
}

func (e *ProtectedBucketsError) Error() string {
	if e.Removed {
		return fmt.Sprintf("central: bucket(s) %s are no longer in the file but were last applied with protect (the state records central.s3.buckets.<bucket>.protect): slipway removes none of the central objects; put them back with protect unset and apply, then remove them, or apply with --keep-claims, which keeps the buckets", strings.Join(e.Buckets, ", "))
	}
	return fmt.Sprintf("central: bucket(s) %s are protected (central.s3.buckets.<bucket>.protect): destroy refuses and removes nothing; unset protect and apply, or destroy with --keep-claims, which keeps the buckets", strings.Join(e.Buckets, ", "))
}

// ProtectedBucketKeys are the file's keys of c's protected buckets, sorted: what the state
// records of their protect.
func ProtectedBucketKeys(c *spec.Central) []string {
	var out []string
	if c.S3 != nil {
		for _, b := range c.S3.Buckets {
			if b.Protect {
				out = append(out, b.Key)
			}
		}
	}
	slices.Sort(out)
	return out
}

// recordedBuckets puts the state's protected buckets (the file's keys) into c, checked as
// the file's keys are.
func recordedBuckets(c *spec.Central, keys []string) error {
	for _, k := range keys {
		if !spec.IsDNSLabel(k) {
			return fmt.Errorf("central: the state's record of the lane: protected bucket %q is not a DNS label", k)
		}
		if c.S3 == nil {
			c.S3 = &spec.CentralS3{}
		}
		c.S3.Buckets = append(c.S3.Buckets, spec.CentralBucket{Key: k, Protect: true})
	}
	return nil
}

// recordedProtectedBucket reports whether the state records the bucket of S3 name n protected.
func (l *Lane) recordedProtectedBucket(n string) bool {
	return l.Recorded != nil && l.Recorded.S3 != nil && slices.ContainsFunc(l.Recorded.S3.Buckets, func(b spec.CentralBucket) bool {
		return b.Protect && l.bucketName(b.Key) == n
	})
}

// bucketProtected reports whether bucket n is protected: as the file says (so unsetting
// protect and applying lifts it), a bucket the file no longer has as the state records it.
func (l *Lane) bucketProtected(n string) bool {
	if b := l.fileBucket(n); b != nil {
		return b.Protect
	}
	return l.recordedProtectedBucket(n)
}

// protectedRemoved reports whether some of the protected buckets are protected by the state's
// record alone (l.Central is the record itself in the lane of a file without `central:`).
func (l *Lane) protectedRemoved(protected []string) bool {
	return l.Central == l.Recorded || slices.ContainsFunc(protected, func(n string) bool { return l.fileBucket(n) == nil })
}

// recordedBucketProtect is the change that records a bucket's protect when the state says
// otherwise, so that the bucket's removal from the file is judged by it (the bucket is given
// its owner again, which changes nothing).
func (l *Lane) recordedBucketProtect(b spec.CentralBucket, p *Planned) {
	n := l.bucketName(b.Key)
	if slices.ContainsFunc(p.Changes, func(c plan.CentralChange) bool { return c.What == plan.CentralBucket && c.Name == n }) {
		return
	}
	was := l.recordedProtectedBucket(n)
	if was == b.Protect {
		return
	}
	why := "protect recorded in the state (it was not)"
	if was {
		why = "protect lifted in the state (it was recorded)"
	}
	p.add(plan.CentralBucket, b.Key, n, plan.Update, why)
}
