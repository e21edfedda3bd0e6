package ui

import (
	"fmt"

	"slipway.dev/slipway/internal/status"
)

// version is a state version as status prints it: "none" for a node that had none.
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
