package waves

import (
	"fmt"

	"slipway.dev/slipway/internal/event"
	"slipway.dev/slipway/internal/status"
)

// Unhealthy says why a group is not healthy enough for its dependents to start (the gate of
// Flux's dependsOn with wait: true): it was never applied, it is suspended, a node of the file
// is not ready with all its pods and its roles, its last rollout was set back or failed, it
// runs another digest than the state wants, or its published names do not agree. Nil when
// healthy.
func Unhealthy(st *status.Group) []string {
	if !st.Applied {
		return []string{"not applied"}
	}
	if st.Suspended {
		return []string{"suspended"}
	}
	var why []string
	for _, n := range st.Nodes {
		if !n.InFile {
			continue
		}
		why = append(why, nodeHealth(n)...)
	}
	return why
}

func nodeHealth(n status.Node) []string {
	var why []string
	switch {
	case n.Phase != status.Ready:
		why = append(why, fmt.Sprintf("node %s: %s", n.Node, phaseText(n.Phase, n.Reason)))
	case n.Ready < n.Replicas:
		why = append(why, fmt.Sprintf("node %s: %d/%d ready", n.Node, n.Ready, n.Replicas))
	}
	if r := n.LastRollout; r != nil && r.Result != event.RolloutReady {
		why = append(why, fmt.Sprintf("node %s: last rollout %s", n.Node, r.Result))
	} else if n.Drift {
		why = append(why, fmt.Sprintf("node %s: runs another digest than the state wants", n.Node))
	}
	for _, r := range n.Roles {
		if r.Want > 0 && (r.Phase != status.Ready || r.Ready < r.Want) {
			why = append(why, fmt.Sprintf("node %s: role %s: %s, %d/%d ready", n.Node, r.Name, phaseText(r.Phase, r.Reason), r.Ready, r.Want))
		}
	}
	if n.DNS != "" && n.DNS != "agrees" {
		why = append(why, fmt.Sprintf("node %s: published names: %s", n.Node, n.DNS))
	}
	return why
}

func phaseText(p status.Phase, reason string) string {
	if reason != "" {
		return string(p) + ": " + reason
	}
	return string(p)
}

// Settling reports whether a node or role of the group is still progressing: an unhealthy
// group that is settling may yet become healthy; one that is not will not without a change.
func Settling(st *status.Group) bool {
	for _, n := range st.Nodes {
		if n.InFile && n.Phase == status.Progressing {
			return true
		}
		for _, r := range n.Roles {
			if r.Want > 0 && r.Phase == status.Progressing {
				return true
			}
		}
	}
	return false
}
