package ui

import (
	"fmt"
	"io"

	"slipway.dev/slipway/internal/plan"
)

// writeCentral writes the central lane's changes (issue 44): names and what changes, never a
// value.
func writeCentral(w io.Writer, pal palette, cs []plan.CentralChange) {
	if len(cs) == 0 {
		return
	}
	fmt.Fprintln(w, "\n  central services:")
	for _, c := range cs {
		fmt.Fprintln(w, changeLine(pal, marks[c.Action], string(c.Action), c.String()))
	}
}
