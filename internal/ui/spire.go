package ui

import (
	"fmt"
	"io"

	"slipway.dev/slipway/internal/plan"
)

// writeSpire writes the SPIRE lane's changes (FR-015 to FR-017), under each cluster's name on
// the server, in the order they come: a move's old cluster (its parts retired) before the new.
// Changes of no known cluster (rights found again alone) come under "spire".
func writeSpire(w io.Writer, pal palette, cs []plan.SpireChange) {
	for i := 0; i < len(cs); {
		j := i
		for j < len(cs) && cs[j].Cluster == cs[i].Cluster {
			j++
		}
		if cs[i].Cluster == "" {
			fmt.Fprintf(w, "\n  spire:\n")
		} else {
			fmt.Fprintf(w, "\n  spire (cluster %s):\n", q(cs[i].Cluster))
		}
		for _, c := range cs[i:j] {
			fmt.Fprintln(w, changeLine(pal, marks[c.Action], string(c.Action), q(c.String())))
		}
		i = j
	}
}
