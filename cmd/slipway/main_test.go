package main

import (
	"errors"
	"testing"
)

// TestErrorLine: an error is printed with its line breaks and without a raw escape code, which
// could erase what the terminal shows (issue 35, item 8).
func TestErrorLine(t *testing.T) {
	err := errors.New("deployment demo/web: apply: admission webhook denied\x1b[1A\x1b[2K\n  No changes.")
	want := "error: deployment demo/web: apply: admission webhook denied\\x1b[1A\\x1b[2K\n  No changes."
	if got := errorLine(err); got != want {
		t.Errorf("errorLine = %q, want %q", got, want)
	}
	if got := errorLine(errors.New("")); got != "" {
		t.Errorf("errorLine of an empty error = %q, want none", got)
	}
}
