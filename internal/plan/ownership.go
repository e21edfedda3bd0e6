package plan

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"slipway.dev/slipway/internal/spec"
)

// conflict is the change of a desired object whose name a live object slipway did not make
// for group already holds: apply must not take it over (issue 11 item 4).
func conflict(k Key, live metav1.Object, group string) Change {
	return Change{Key: k, Action: Conflict, ResourceVersion: live.GetResourceVersion(),
		Reason: fmt.Sprintf("%s exists and %s: apply will not take it over; delete or rename it, or deploy the group to another namespace", k, notOurs(live, group))}
}

// jobConflict is the change of node's removal Job when a Job of its name is someone else's:
// apply would have to delete it to remove the node's copy of /var/lib (issue 35 item 3).
func jobConflict(k Key, live metav1.Object, group, node string) Change {
	return Change{Key: k, Action: Conflict, ResourceVersion: live.GetResourceVersion(),
		Reason: fmt.Sprintf("%s exists and %s: apply removes node %s's copy of /var/lib with a Job of that name and will not delete this one; delete or rename it, and apply again", k, notOurs(live, group), node)}
}

// notOurs says whose a live object is that slipway did not make for group.
func notOurs(live metav1.Object, group string) string {
	if owner := live.GetLabels()[spec.LabelGroup]; owner != "" && owner != group {
		return "it belongs to group " + owner
	}
	return "slipway did not make it"
}

// terminating is the change of a desired object that someone is deleting: apply would update
// an object about to vanish, and for a claim the node's data goes with it (issue 11 item 5).
func terminating(k Key, live *unstructured.Unstructured, node string) Change {
	c := Change{Key: k, Action: Terminating, ResourceVersion: live.GetResourceVersion()}
	since := ""
	if ts := live.GetDeletionTimestamp(); ts != nil {
		since = " since " + ts.UTC().Format("2006-01-02 15:04:05Z")
	}
	var what []string
	what = append(what, fmt.Sprintf("being deleted outside slipway (Terminating%s)", since))
	if k.Kind == "PersistentVolumeClaim" {
		c.Destructive = true
		what = append(what, "the node's state on /var/lib is lost with it")
	}
	if node == "" {
		what = append(what, "apply changes nothing until it is gone")
	} else {
		what = append(what, fmt.Sprintf("apply will not roll out node %s until it is gone (it goes once no pod uses it); then apply makes it anew", node))
	}
	c.Reason = strings.Join(what, "; ")
	return c
}

// namespaceTerminating reports the namespace as being deleted when Compute did not already
// (a namespace slipway did not create is not among the desired objects).
func namespaceTerminating(in Input, wanted map[Key]bool) (Change, bool) {
	k := Key{Kind: "Namespace", Name: in.Namespace}
	live := in.Live[k]
	if live == nil || live.GetDeletionTimestamp() == nil || wanted[k] {
		return Change{}, false
	}
	return terminating(k, live, ""), true
}

// Blocked returns why apply must not go on with p at all: objects it would take over, or a
// namespace being deleted. Nil when nothing blocks it. A node whose own object is being
// deleted is not here: apply refuses that node alone (NodeBlocked).
func (p *Plan) Blocked() error {
	var why []string
	for _, np := range p.Nodes {
		for _, c := range np.Changes {
			switch {
			case c.Action == Conflict:
				why = append(why, c.Reason)
			case c.Action == Terminating && np.Node == "":
				why = append(why, c.Key.String()+": "+c.Reason)
			}
		}
	}
	if len(why) == 0 {
		return nil
	}
	return fmt.Errorf("group %s: apply refused before any change:\n  %s", p.Group, strings.Join(why, "\n  "))
}

// NodeBlocked returns why apply must not roll out node, nil when nothing blocks it.
func (p *Plan) NodeBlocked(node string) error { return nodeBlocked(p.Node(node)) }

// nodeBlocked is NodeBlocked of a node's plan, nil for none or the group's.
func nodeBlocked(np *NodePlan) error {
	if np == nil || np.Node == "" {
		return nil
	}
	var why []string
	for _, c := range np.Changes {
		if c.Action == Terminating {
			why = append(why, c.Key.String()+": "+c.Reason)
		}
	}
	why = append(why, recordConflicts(np)...)
	if len(why) == 0 {
		return nil
	}
	return fmt.Errorf("not rolled out: %s", strings.Join(why, "; "))
}
