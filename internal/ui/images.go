package ui

import (
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"time"

	"slipway.dev/slipway/internal/event"
)

// ImageEvents returns the printer of `images push`'s events on w: a timestamped line each, or
// with asJSON a JSON line each (docs/json.md). The publisher has thinned the progress already.
// The printer is safe for concurrent use.
func ImageEvents(w io.Writer, asJSON bool) func(event.Image) {
	var mu sync.Mutex
	return func(e event.Image) {
		mu.Lock()
		defer mu.Unlock()
		if asJSON {
			_ = json.NewEncoder(w).Encode(e)
			return
		}
		fmt.Fprintf(w, "%s image %s: %s\n", time.Now().Format("15:04:05"), q(e.Name), q(imageLine(e)))
	}
}

func imageLine(e event.Image) string {
	switch e.Kind {
	case event.ImageBuilt:
		return "built " + e.Ref
	case event.ImageWarning:
		return "warning: " + e.Message
	case event.ImageExists:
		return "in the registry already: " + e.Digest
	case event.ImageProgress:
		return fmt.Sprintf("pushing %s of %s", size(e.Done), size(e.Total))
	case event.ImagePushed:
		return "pushed " + e.Digest
	}
	return string(e.Kind)
}

// PushedImage is an image `images push` pushed or found in the registry (docs/json.md).
type PushedImage struct {
	Name   string `json:"name"`
	Tag    string `json:"tag"`    // <repository>:<tag>
	Digest string `json:"digest"` // <repository>@sha256:…
	Pushed bool   `json:"pushed"` // false: the registry had it
}

// PrintPushed writes `images push`'s result: a digest a line, or with asJSON one list.
func PrintPushed(w io.Writer, images []PushedImage, asJSON bool) error {
	if asJSON {
		if images == nil {
			images = []PushedImage{}
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(images)
	}
	for _, im := range images {
		if _, err := fmt.Fprintln(w, q(im.Digest)); err != nil {
			return err
		}
	}
	return nil
}
