package ui

import (
	"fmt"
	"io"

	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/status"
)

// writeMigration says what a node's state migration, or the removal of a copy left by one,
// does to its volume (SPEC §6a).
func writeMigration(w io.Writer, pal palette, np plan.NodePlan) {
	if m := np.Migration; m != nil {
		fmt.Fprintln(w, changeLine(pal, "~", "migrate", fmt.Sprintf("state version %s -> %s", version(m.From), version(m.To))))
		fmt.Fprintf(w, "        the new pod copies /var/lib to %s on its volume before the node starts; if the rollout fails,\n", "/var/lib/.slipway-state/copy")
		fmt.Fprintf(w, "        the template set back puts the copy back first and the state keeps version %s; if it succeeds, the copy is removed\n", version(m.From))
	}
	if c := np.RemoveCopy; c != nil {
		fmt.Fprintln(w, changeLine(pal, "-", "remove", fmt.Sprintf("copy of /var/lib taken at state version %s (its migration to %s ran ready)", version(c.From), version(c.To))))
	}
}

// version is a state version as plan prints it: "none" for a node that had none.
func version(v string) string {
	if v == "" {
		return "none"
	}
	return q(v) // the state's: a backend anyone with its rights may have written
}

// stateText is the STATE column of status: the state version the node last ran ready with
// ("-" none), and "+copy" while its volume holds a copy of /var/lib (SPEC §6a).
func stateText(n status.Node) string {
	s := "-"
	if n.StateVersion != "" {
		s = q(n.StateVersion)
	}
	if n.Copy != nil {
		s += " +copy"
	}
	return s
}

// copyNote says what a held copy of /var/lib is and what becomes of it; "" when none.
func copyNote(n status.Node) string {
	c := n.Copy
	if c == nil {
		return ""
	}
	where := "a copy of /var/lib taken at state version " + version(c.From) + " (in /var/lib/.slipway-state/copy on its volume)"
	if c.Removable {
		return fmt.Sprintf("node %s: holds %s; its migration to %s ran ready: the next apply removes it", q(n.Node), where, version(c.To))
	}
	return fmt.Sprintf("node %s: holds %s; its migration to %s has not run ready: a failed rollout puts it back, one that runs ready removes it", q(n.Node), where, version(c.To))
}
