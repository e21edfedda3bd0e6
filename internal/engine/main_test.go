package engine

import (
	"os"
	"testing"
)

// The fake cluster's steps take microseconds: state writes are not spaced in these tests but
// in TestStateWritesArePaced.
func TestMain(m *testing.M) {
	statePace = 0
	os.Exit(m.Run())
}
