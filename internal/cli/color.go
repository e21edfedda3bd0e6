package cli

import (
	"io"
	"os"

	"golang.org/x/term"

	"slipway.dev/slipway/internal/ui"
)

// planOptions colours a plan written to w when w is a terminal, NO_COLOR is unset and
// --no-color was not given; a pipe or a file gets no escape codes.
func (g *Globals) planOptions(w io.Writer) ui.PlanOptions {
	return ui.PlanOptions{Color: ui.UseColor(isTerminal(w), g.NoColor, os.Getenv("NO_COLOR"))}
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
