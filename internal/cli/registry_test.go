package cli

import (
	"errors"
	"testing"

	"slipway.dev/slipway/internal/image"
)

// Every verb that pushes or pins images says the same thing when no registry is set.
func TestNoRegistry(t *testing.T) {
	for _, args := range [][]string{{"plan"}, {"apply", "--yes"}, {"images", "push"}, {"render"}} {
		t.Run(args[0], func(t *testing.T) {
			err := runRoot(t, []string{"K8S_REGISTRY="}, args...)
			if !errors.Is(err, image.ErrNoRegistry) {
				t.Fatalf("error %v, want image.ErrNoRegistry (%q)", err, image.ErrNoRegistry)
			}
		})
	}
}
