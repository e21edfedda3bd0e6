package ui

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"slipway.dev/slipway/internal/event"
)

// StateView is what `state show` prints, filled by cli from the group's state and its lock
// (ui reaches no state backend).
type StateView struct {
	Group    string
	Location string    // the state's location, without credentials
	Lock     *LockView // nil: not locked
	State    *StateDoc // nil: nothing applied yet
}

// LockView is a lock's holder.
type LockView struct {
	Holder  string // who, what, since when and the lock ID, as state.Info says it
	ID      string
	PID     int
	Process string    // "running" or "not running" when the holder ran on this host, else "unknown"
	Expires time.Time // a lease's end; zero for locks that stay until unlocked
}

// StateDoc is the state document's head and its nodes, sorted by name.
type StateDoc struct {
	Namespace string
	Serial    int64
	Lineage   string
	Nodes     []StateNode
}

// StateNode is one node of the state.
type StateNode struct {
	Name, MachineID            string
	ImageRef, ImageTag, Digest string
	LastRollout                *event.Rollout // nil: none yet
	PreviousReady              string         // ref@digest of the last image that became ready
	Suspended                  bool
	Roles                      map[string]int32 // role → replicas
}

// PrintState writes `state show`'s text: the lock, the state's head and a table of its nodes.
func PrintState(w io.Writer, v StateView) error {
	fmt.Fprintf(w, "State of group %s in %s\n", q(v.Group), q(v.Location))
	writeLock(w, v.Lock)
	doc := v.State
	if doc == nil {
		_, err := fmt.Fprintln(w, "No state: nothing applied yet.")
		return err
	}
	fmt.Fprintf(w, "Namespace: %s\nSerial:    %d\nLineage:   %s\n", q(doc.Namespace), doc.Serial, q(doc.Lineage))
	if len(doc.Nodes) == 0 {
		_, err := fmt.Fprintln(w, "Nodes:     none")
		return err
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tIMAGE\tLAST ROLLOUT\tROLES\tMACHINE ID")
	for _, ns := range doc.Nodes {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", q(ns.Name), q(stateImage(ns)), q(stateRollout(ns)), q(stateRoles(ns.Roles)), q(ns.MachineID))
	}
	return tw.Flush()
}

func writeLock(w io.Writer, lock *LockView) {
	if lock == nil {
		fmt.Fprintln(w, "Lock:      none")
		return
	}
	fmt.Fprintf(w, "Lock:      held by %s\n", q(lock.Holder))
	switch lock.Process {
	case "not running":
		fmt.Fprintf(w, "           process %d is not running on this host: the lock is stale; remove it with `slipway state unlock %s`\n", lock.PID, q(lock.ID))
	case "running":
		fmt.Fprintf(w, "           process %d is running on this host\n", lock.PID)
	}
	if lock.Expires.IsZero() {
		return
	}
	if time.Now().After(lock.Expires) {
		fmt.Fprintf(w, "           its lease expired at %s without renewal: the next run takes it over\n", lock.Expires.UTC().Format(time.RFC3339))
	} else {
		fmt.Fprintf(w, "           its lease runs until %s unless renewed\n", lock.Expires.UTC().Format(time.RFC3339))
	}
}

// stateImage is ref[:tag][@short digest].
func stateImage(ns StateNode) string {
	img := ns.ImageRef
	if ns.ImageTag != "" {
		img += ":" + ns.ImageTag
	}
	if ns.Digest != "" {
		img += "@" + shortDigest(ns.Digest)
	}
	return img
}

func stateRollout(ns StateNode) string {
	ro := "-"
	if r := ns.LastRollout; r != nil {
		ro = r.Result + " " + r.Time.UTC().Format(time.RFC3339)
		if r.Result == event.RolloutRolledBack && ns.PreviousReady != "" {
			ro = "rolled back to " + ns.PreviousReady + " " + r.Time.UTC().Format(time.RFC3339)
		}
	}
	if ns.Suspended {
		ro += " (suspended)"
	}
	return ro
}

// stateRoles is role=replicas,… sorted by role, "-" for none.
func stateRoles(roles map[string]int32) string {
	var out []string
	for _, r := range slices.Sorted(maps.Keys(roles)) {
		out = append(out, fmt.Sprintf("%s=%d", r, roles[r]))
	}
	if len(out) == 0 {
		return "-"
	}
	return strings.Join(out, ",")
}
