package ui

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"slipway.dev/slipway/internal/event"
	"slipway.dev/slipway/internal/quote"
	"slipway.dev/slipway/internal/status"
)

// RolloutSummary is one line about a node's last rollout, e.g.
// "rolled back to sha256:… at 2026-01-02T03:04:05Z: CrashLoopBackOff: pod …".
func RolloutSummary(r *event.Rollout) string {
	if r == nil {
		return "none yet"
	}
	at := r.Time.UTC().Format(time.RFC3339)
	var s string
	switch r.Result {
	case event.RolloutReady:
		s = fmt.Sprintf("ready %s at %s", q(r.Digest), at)
	case event.RolloutRolledBack:
		s = fmt.Sprintf("rolled back to %s at %s", q(r.Digest), at)
	case event.RolloutFailed:
		s = fmt.Sprintf("failed %s at %s, with nothing to roll back to", q(r.Digest), at)
	case event.RolloutInProgress:
		// Not ready: it has not run to the end (an apply or resume running or stopped, or a
		// template applied while suspended).
		s = fmt.Sprintf("in flight %s since %s, not ready yet; the next apply (resume, when suspended) follows it", q(r.Digest), at)
	default:
		s = fmt.Sprintf("%s %s at %s", q(r.Result), q(r.Digest), at)
	}
	if r.Message != "" {
		s += ": " + quote.Line(r.Message) // recorded from the cluster, perhaps by an older slipway
	}
	return s
}

// Status writes a group's status as text: a table with one row per node, then the notes and
// the last rollout of each node.
func Status(w io.Writer, s *status.Group) {
	fmt.Fprintf(w, "Group %s in namespace %s", q(s.Group), q(s.Namespace))
	if s.Applied {
		fmt.Fprintf(w, " (state serial %d)\n", s.StateSerial)
	} else {
		fmt.Fprintln(w, " (nothing applied yet)")
	}
	if s.AdoptsFrom != "" {
		fmt.Fprintf(w, "Its state and objects are still under the key of an earlier release, %s: the next `slipway apply` adopts them.\n", q(s.AdoptsFrom))
	}
	if s.Suspended {
		fmt.Fprintf(w, "Group %s is suspended: its Deployments stay at 0 replicas until `slipway resume`.\n", q(s.Group))
	}
	if len(s.Nodes) == 0 {
		fmt.Fprintln(w, "No nodes.")
		return
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	// The STATE column only where a node has a state version or holds a copy (SPEC §6a).
	versioned := slices.ContainsFunc(s.Nodes, func(n status.Node) bool { return n.StateVersion != "" || n.Copy != nil })
	header := "NODE\tDESIRED\tRUNNING\tPODS\tSTATUS\tROLES"
	if versioned {
		header += "\tSTATE"
	}
	fmt.Fprintln(tw, header+"\tSUSPENDED")
	for _, n := range s.Nodes {
		row := fmt.Sprintf("%s\t%s\t%s\t%d/%d\t%s\t%s", q(n.Node), shortDigest(n.Desired), shortDigest(n.Running),
			n.Ready, n.Replicas, phaseText(n.Phase, n.Reason), rolesText(n.Roles))
		if versioned {
			row += "\t" + stateText(n)
		}
		fmt.Fprintln(tw, row+"\t"+yesNo(n.Suspended))
	}
	_ = tw.Flush()

	var notes []string
	for _, n := range s.Nodes {
		if !n.InFile {
			notes = append(notes, fmt.Sprintf("node %s: no longer in the group file: the next apply removes it", n.Node))
		}
		if !n.InState && n.InFile {
			notes = append(notes, fmt.Sprintf("node %s: not applied yet", n.Node))
		}
		if n.Protected {
			notes = append(notes, fmt.Sprintf("node %s: its claim is protected (state.protect): plan refuses to delete or replace it", n.Node))
		}
		if note := copyNote(n); note != "" {
			notes = append(notes, note)
		}
		if n.Drift {
			notes = append(notes, fmt.Sprintf("node %s: runs %s, the state wants %s: the next apply rolls it out again", n.Node, n.Running, n.Desired))
		}
		if n.Phase != status.Ready && n.Phase != status.Absent && n.Message != "" {
			notes = append(notes, fmt.Sprintf("node %s: %s", n.Node, n.Message))
		}
		for _, r := range n.Roles {
			if r.Phase != status.Ready && r.Phase != status.Absent && r.Message != "" {
				notes = append(notes, fmt.Sprintf("node %s: role %s: %s", n.Node, r.Name, r.Message))
			}
		}
	}
	if len(notes) > 0 {
		fmt.Fprintln(w, "\nNotes:")
		for _, n := range notes {
			fmt.Fprintln(w, "  "+q(n)) // composed of the cluster's and the state's words
		}
	}
	publishedNames(w, s)
	fmt.Fprintln(w, "\nLast rollouts:")
	for _, n := range s.Nodes {
		fmt.Fprintf(w, "  %s: %s\n", q(n.Node), RolloutSummary(n.LastRollout))
	}
}

// StatusJSON writes a group's status as one JSON document; each last rollout carries its
// summary line as the text output shows it.
func StatusJSON(w io.Writer, s *status.Group) error {
	type rollout struct {
		*event.Rollout
		Summary string `json:"summary"`
	}
	type node struct {
		status.Node
		LastRollout *rollout `json:"lastRollout,omitempty"`
	}
	type group struct {
		Version int `json:"version"`
		*status.Group
		Nodes []node `json:"nodes"`
	}
	out := group{Version: JSONVersion, Group: s, Nodes: []node{}}
	for _, n := range s.Nodes {
		v := node{Node: n}
		if n.LastRollout != nil {
			v.LastRollout = &rollout{Rollout: n.LastRollout, Summary: RolloutSummary(n.LastRollout)}
		}
		out.Nodes = append(out.Nodes, v)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// shortDigest is sha256: and the first 12 hex digits, "-" for none.
func shortDigest(d string) string {
	if d == "" {
		return "-"
	}
	if algo, hex, ok := strings.Cut(d, ":"); ok && len(hex) > 12 {
		return q(algo + ":" + hex[:12])
	}
	return q(d)
}

func phaseText(phase status.Phase, reason string) string {
	if reason != "" && phase != status.Ready {
		return string(phase) + ": " + q(reason)
	}
	return string(phase)
}

func rolesText(roles []status.Role) string {
	if len(roles) == 0 {
		return "-"
	}
	parts := make([]string, 0, len(roles))
	for _, r := range roles {
		p := fmt.Sprintf("%s %d/%d", q(r.Name), r.Ready, r.Replicas)
		switch {
		case r.Phase == status.Absent:
			p = q(r.Name) + " absent"
		case r.Replicas == 0 && r.Want > 0:
			p += fmt.Sprintf(" (stopped, wants %d)", r.Want)
		case r.Phase != status.Ready:
			p += " (" + phaseText(r.Phase, r.Reason) + ")"
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, ", ")
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// publishedNames writes, with `publish:`, each published node's names and the address they
// point at (SPEC §7).
func publishedNames(w io.Writer, s *status.Group) {
	var lines []string
	for _, n := range s.Nodes {
		if len(n.Names) == 0 {
			continue
		}
		addr := "no address yet"
		if len(n.Address) > 0 {
			addr = strings.Join(n.Address, ", ")
		}
		line := fmt.Sprintf("  %s: %s → %s", n.Node, strings.Join(n.Names, ", "), addr)
		if n.DNS != "" {
			line += "; dns " + n.DNS
		}
		lines = append(lines, line)
	}
	if len(lines) > 0 {
		fmt.Fprintln(w, "\nPublished names:")
		for _, l := range lines {
			fmt.Fprintln(w, q(l))
		}
	}
}
