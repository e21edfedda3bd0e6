// Package testkit holds what the tests of several packages share and that needs no cluster:
// golden files and helper processes. Only tests import it.
package testkit

import (
	"flag"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata from the current output")

// Golden compares got with the golden file at path, reporting the difference (-want +got);
// with -update it writes got there first.
func Golden(t testing.TB, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s differs (-want +got), run with -update if intended:\n%s", path, diff)
	}
}
