package devcluster

import (
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"
)

// Without knotd, dev up says which package to install instead of failing obscurely.
func TestDevUpWithoutKnotSaysHowToGetIt(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	old := knotdFallback
	knotdFallback = filepath.Join(t.TempDir(), "knotd")
	t.Cleanup(func() { knotdFallback = old })
	e := &Env{Dir: t.TempDir()}
	_, err := e.ensureDNS(context.Background(), io.Discard)
	if err == nil || !strings.Contains(err.Error(), "apt-get install -y knot") {
		t.Fatalf("ensureDNS without knotd = %v, want an error saying to apt-get install knot", err)
	}
}
