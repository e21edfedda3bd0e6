package image

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// report is one progress report of an upload, at ms milliseconds into it.
type report struct{ ms, done, total int64 }

// scriptedPublisher reports the script as its upload progress, moving the clock of the
// throttled publisher that wraps it.
type scriptedPublisher struct {
	script []report
	clock  *time.Time
}

func (p *scriptedPublisher) Lookup(context.Context, string) (v1.Hash, bool, error) {
	return v1.Hash{}, false, nil
}

func (p *scriptedPublisher) Publish(_ context.Context, _ string, _ v1.Image, progress func(done, total int64)) (name.Digest, error) {
	start := *p.clock
	for _, r := range p.script {
		*p.clock = start.Add(time.Duration(r.ms) * time.Millisecond)
		if progress != nil {
			progress(r.done, r.total)
		}
	}
	return name.Digest{}, nil
}

func TestThrottle(t *testing.T) {
	for _, tc := range []struct {
		name   string
		script []report
		want   []report
	}{
		{"every read in one second: the first and the last",
			[]report{{0, 10, 100}, {100, 20, 100}, {500, 60, 100}, {900, 100, 100}},
			[]report{{0, 10, 100}, {900, 100, 100}}},
		{"one a second over a slow upload",
			[]report{{0, 1, 10}, {400, 2, 10}, {1000, 3, 10}, {1500, 4, 10}, {2100, 5, 10}, {2200, 10, 10}},
			[]report{{0, 1, 10}, {1000, 3, 10}, {2100, 5, 10}, {2200, 10, 10}}},
		{"a repeated figure or an unknown total is not news",
			[]report{{0, 0, 0}, {0, 5, 10}, {1500, 5, 10}, {3000, 5, 12}, {3100, 12, 12}, {3200, 12, 12}},
			[]report{{0, 5, 10}, {3100, 12, 12}}},
		{"complete while the total is still counted in, then more",
			[]report{{0, 4, 4}, {10, 4, 8}, {20, 8, 8}},
			[]report{{0, 4, 4}, {20, 8, 8}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
			p := Throttle(&scriptedPublisher{script: tc.script, clock: &clock}, time.Second).(*throttled)
			p.now = func() time.Time { return clock }
			start := clock
			var got []report
			if _, err := p.Publish(context.Background(), "r/demo/web:c-1", nil, func(done, total int64) {
				got = append(got, report{clock.Sub(start).Milliseconds(), done, total})
			}); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(report{})); diff != "" {
				t.Errorf("reports passed on (-want +got):\n%s", diff)
			}
		})
	}
}

// Both push paths get their publisher from NewPublisher: it must come throttled.
func TestNewPublisherIsThrottled(t *testing.T) {
	p, err := NewPublisher(Options{Registry: "127.0.0.1:5000"})
	if err != nil {
		t.Fatal(err)
	}
	th, ok := p.(*throttled)
	if !ok || th.every != ProgressEvery {
		t.Fatalf("NewPublisher = %T, want a publisher throttled to %s", p, ProgressEvery)
	}
}
