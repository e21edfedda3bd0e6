package engine

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/state"
)

func TestImageRecord(t *testing.T) {
	got := imageRecord(plan.Image{Name: "web", Tag: "127.0.0.1:5000/demo/web:c-0123", Digest: "127.0.0.1:5000/demo/web@sha256:ab"})
	want := state.ImageRecord{Ref: "127.0.0.1:5000/demo/web", Tag: "c-0123", Digest: "sha256:ab"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("imageRecord (-want +got):\n%s", d)
	}
}
