package ui

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"slipway.dev/slipway/internal/event"
)

func TestImageEvents(t *testing.T) {
	for _, tc := range []struct {
		e    event.Image
		want string // the text line after its time
	}{
		{event.Image{Name: "web", Kind: event.ImageBuilt, Ref: "r/web:c-1"}, "image web: built r/web:c-1"},
		{event.Image{Name: "web", Kind: event.ImageWarning, Message: "skipped dev/null"}, "image web: warning: skipped dev/null"},
		{event.Image{Name: "web", Kind: event.ImageExists, Digest: "r/web@sha256:a"}, "image web: in the registry already: r/web@sha256:a"},
		{event.Image{Name: "web", Kind: event.ImageProgress, Done: 3 << 10, Total: 5 << 20}, "image web: pushing 3.0 KiB of 5.0 MiB"},
		{event.Image{Name: "web", Kind: event.ImagePushed, Digest: "r/web@sha256:b"}, "image web: pushed r/web@sha256:b"},
	} {
		t.Run(string(tc.e.Kind), func(t *testing.T) {
			var text, js bytes.Buffer
			ImageEvents(&text, false)(tc.e)
			_, line, _ := strings.Cut(strings.TrimSuffix(text.String(), "\n"), " ")
			if d := cmp.Diff(tc.want, line); d != "" {
				t.Errorf("text (-want +got):\n%s", d)
			}
			ImageEvents(&js, true)(tc.e)
			var got event.Image
			if err := json.Unmarshal(js.Bytes(), &got); err != nil {
				t.Fatalf("JSON line %q: %v", js.String(), err)
			}
			if d := cmp.Diff(tc.e, got); d != "" {
				t.Errorf("JSON (-want +got):\n%s", d)
			}
		})
	}
}
