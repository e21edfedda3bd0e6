package e2e

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestDestroy: the namespace is gone, the state removed, the images still in the registry.
func TestDestroy(t *testing.T) {
	t.Parallel()
	g := NewGroup(t, "destroy", helloGroup, "web", "db")
	g.MustRun(0, "apply", "--yes")
	stateFile := filepath.Join(g.Dir, ".slipway", "state", g.Name+".json")
	if _, err := os.Stat(stateFile); err != nil {
		t.Fatalf("state after apply: %v", err)
	}
	tags := map[string][]string{"web": g.RepoTags("web"), "db": g.RepoTags("db")}
	if len(tags["web"]) == 0 || len(tags["db"]) == 0 {
		t.Fatalf("images not in the registry after apply: %v", tags)
	}

	g.MustRun(0, "destroy", "--yes")
	if g.NamespaceExists() {
		t.Errorf("namespace %s still exists after destroy", g.Name)
	}
	if _, err := os.Stat(stateFile); !os.IsNotExist(err) {
		t.Errorf("state file %s after destroy: want it gone, got %v", stateFile, err)
	}
	if st := g.State(); st.State != nil || st.Lock != nil {
		t.Errorf("state show after destroy: want no state and no lock, got %+v", st)
	}
	if diff := cmp.Diff(tags, map[string][]string{"web": g.RepoTags("web"), "db": g.RepoTags("db")}); diff != "" {
		t.Errorf("registry tags after destroy (-want +got):\n%s", diff)
	}
	// Destroying what is gone is no error.
	g.MustRun(0, "destroy", "--yes")
}
