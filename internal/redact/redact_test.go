package redact_test

import (
	"errors"
	"fmt"
	"net/url"
	"testing"

	"slipway.dev/slipway/internal/redact"
)

func TestURL(t *testing.T) {
	keepID := func(k string) bool { return k == "ID" }
	tests := []struct {
		name, raw string
		keep      func(string) bool
		want      string
	}{
		{"no query", "https://state.example.org/slipway/demo", nil, "https://state.example.org/slipway/demo"},
		{"access token", "https://state.example.org/demo?access_token=glpat-s3cret", nil, "https://state.example.org/demo?access_token=REDACTED"},
		{"pre-signed URL", "https://bucket.example.org/demo.json?X-Amz-Credential=AKIA&X-Amz-Signature=abc", nil,
			"https://bucket.example.org/demo.json?X-Amz-Credential=REDACTED&X-Amz-Signature=REDACTED"},
		{"kept parameter", "https://state.example.org/demo?ID=lock-1&token=s3cret", keepID, "https://state.example.org/demo?ID=lock-1&token=REDACTED"},
		{"password", "https://ops:pa55@state.example.org/demo?token=s3cret", nil, "https://ops:xxxxx@state.example.org/demo?token=REDACTED"},
		{"unparsable", "https://ops:pa55@state.example.org:port/demo?token=s3cret", nil, "https://xxxxx@state.example.org:port/demo?REDACTED"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := redact.URL(tt.raw, tt.keep); got != tt.want {
				t.Errorf("URL(%q) = %q, want %q", tt.raw, got, tt.want)
			}
		})
	}
}

func TestURLErrors(t *testing.T) {
	inner := &url.Error{Op: "Get", URL: "https://s.example.org/x?token=s3cret", Err: errors.New("reset")}
	err := errors.Join(fmt.Errorf("read: %w", inner), errors.New("other"))
	redact.URLErrors(err, nil)
	if want := "https://s.example.org/x?token=REDACTED"; inner.URL != want {
		t.Errorf("URL = %q, want %q", inner.URL, want)
	}
}
