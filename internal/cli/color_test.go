package cli

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// openPTY returns the terminal end of a new pseudo-terminal: what a user's shell gives slipway.
func openPTY(t *testing.T) *os.File {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		t.Fatalf("no pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { master.Close() })
	if err := unix.IoctlSetPointerInt(int(master.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatalf("unlock pty: %v", err)
	}
	n, err := unix.IoctlGetInt(int(master.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatalf("pty number: %v", err)
	}
	tty, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("open pty: %v", err)
	}
	t.Cleanup(func() { tty.Close() })
	return tty
}

func TestPlanColour(t *testing.T) {
	tty := openPTY(t)
	tests := []struct {
		name    string
		w       io.Writer
		noColor bool
		env     string
		want    bool
	}{
		{"a terminal", tty, false, "", true},
		{"a pipe or a buffer", &bytes.Buffer{}, false, "", false},
		{"NO_COLOR", tty, false, "1", false},
		{"--no-color", tty, true, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("NO_COLOR", tt.env)
			g := &Globals{NoColor: tt.noColor}
			if got := g.planOptions(tt.w).Color; got != tt.want {
				t.Errorf("colour = %v, want %v", got, tt.want)
			}
		})
	}
}
