package image

import (
	"context"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// ProgressEvery is the most often a Publisher from NewPublisher reports one image's upload
// progress: the uploader reports every read, while a person reads about a line a second and a
// JSON consumer needs no more.
const ProgressEvery = time.Second

// throttled is a Publisher whose upload progress is thinned once, here, for every push path
// (apply, images push, render --push) and every printer behind it.
type throttled struct {
	Publisher
	every time.Duration
	now   func() time.Time
}

// Throttle returns p reporting upload progress only when the bytes done changed, at most once
// per every for an image, and always when the upload is complete.
func Throttle(p Publisher, every time.Duration) Publisher {
	return &throttled{Publisher: p, every: every, now: time.Now}
}

func (t *throttled) Publish(ctx context.Context, ref string, img v1.Image, progress func(done, total int64)) (name.Digest, error) {
	if progress == nil {
		return t.Publisher.Publish(ctx, ref, img, nil)
	}
	var mu sync.Mutex
	var last time.Time
	lastDone := int64(-1)
	return t.Publisher.Publish(ctx, ref, img, func(done, total int64) {
		mu.Lock()
		now := t.now()
		// The uploader repeats the total as blobs are counted in: a report is worth passing
		// on when it moved, at a bounded rate, and always when it is the last.
		send := total > 0 && done != lastDone && (done == total || now.Sub(last) >= t.every)
		if send {
			last, lastDone = now, done
		}
		mu.Unlock()
		if send {
			progress(done, total)
		}
	})
}
