package quote_test

import (
	"testing"

	"slipway.dev/slipway/internal/quote"
)

func TestLineAndText(t *testing.T) {
	tests := []struct {
		name, in, line, text string
	}{
		{"plain", "back-off 10s restarting failed container", "back-off 10s restarting failed container", "back-off 10s restarting failed container"},
		{"any script", "café ✓ 日本", "café ✓ 日本", "café ✓ 日本"},
		{"erase a line and fake a result", "x\x1b[1A\x1b[2KNo changes.", `x\x1b[1A\x1b[2KNo changes.`, `x\x1b[1A\x1b[2KNo changes.`},
		{"line breaks", "a\nNo changes.\r\n\tb", `a\nNo changes.\r\n\tb`, "a\nNo changes.\\r\n\tb"},
		{"C1 and bidi controls", "a\u009b2Kb\u202ec", `a\u009b2Kb\u202ec`, `a\u009b2Kb\u202ec`},
		{"invalid UTF-8 and DEL", "a\xffb\x7f", `a\xffb\x7f`, `a\xffb\x7f`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := quote.Line(tt.in); got != tt.line {
				t.Errorf("Line(%q) = %q, want %q", tt.in, got, tt.line)
			}
			if got := quote.Text(tt.in); got != tt.text {
				t.Errorf("Text(%q) = %q, want %q", tt.in, got, tt.text)
			}
		})
	}
}

func TestLines(t *testing.T) {
	if got, want := quote.Lines("one\x1b[2K\ntwo\r", "\n    "), "one\\x1b[2K\n    two\\r"; got != want {
		t.Errorf("Lines = %q, want %q", got, want)
	}
}
