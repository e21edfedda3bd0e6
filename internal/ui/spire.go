package ui

import (
	"fmt"
	"io"

	"slipway.dev/slipway/internal/plan"
)

// writeSpire writes the SPIRE lane's changes (FR-015 to FR-017), under the cluster's name on
// the server.
func writeSpire(w io.Writer, pal palette, cs []plan.SpireChange) {
	if len(cs) == 0 {
		return
	}
	fmt.Fprintf(w, "\n  spire (cluster %s):\n", q(cs[0].Cluster))
	for _, c := range cs {
		fmt.Fprintln(w, changeLine(pal, marks[c.Action], string(c.Action), q(c.String())))
	}
}
