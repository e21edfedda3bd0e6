package cli

import (
	"strings"
	"testing"

	"slipway.dev/slipway/internal/spec"
)

// --timeout's help names the default a node's rolloutTimeout gets, from the one constant.
func TestTimeoutHelpNamesTheDefault(t *testing.T) {
	f := NewRoot().PersistentFlags().Lookup("timeout")
	if f == nil {
		t.Fatal("no --timeout flag")
	}
	if want := "(default " + spec.DefaultRolloutTimeout.String() + ")"; !strings.Contains(f.Usage, want) {
		t.Errorf("--timeout help %q does not say %q", f.Usage, want)
	}
}
