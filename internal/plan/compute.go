package plan

import (
	"slices"
	"sort"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"slipway.dev/slipway/internal/spec"
)

// Compute makes the plan.
func Compute(in Input) *Plan {
	p := &Plan{
		Version: FormatVersion, Group: in.Group, Namespace: in.Namespace, Created: time.Now().UTC(),
		StateSerial: in.StateSerial, StateLineage: in.StateLineage, Suspended: in.Suspended,
		ForeignNamespace: in.ForeignNamespace, Images: in.Images, MachineIDs: in.MachineIDs, Desired: in.Desired,
		Deferred: in.Deferred,
	}
	c := &computation{in: in, byNode: map[string]*NodePlan{}, wanted: map[Key]bool{}, desiredNodes: map[string]bool{}}
	c.desired()
	c.followAll()
	if ch, ok := namespaceTerminating(in, c.wanted); ok {
		c.add("", ch)
	}
	c.deletions()
	for _, name := range sortedKeys(c.byNode) {
		np := c.byNode[name]
		sort.SliceStable(np.Changes, func(i, j int) bool {
			// deletions last, in reverse apply order is the engine's business; keep them stable here
			return np.Changes[i].Action != Delete && np.Changes[j].Action == Delete
		})
		p.Nodes = append(p.Nodes, *np)
	}
	p.Drift = c.drift()
	addMigrations(p, in)
	return p
}

// computation is Compute's working set: the changes per node so far and what the file wants.
type computation struct {
	in           Input
	byNode       map[string]*NodePlan
	wanted       map[Key]bool
	desiredNodes map[string]bool
}

func nodeOf(u *unstructured.Unstructured) string { return Label(u, spec.LabelNode) }

func (c *computation) add(node string, ch Change) {
	np := c.byNode[node]
	if np == nil {
		np = &NodePlan{Node: node}
		c.byNode[node] = np
	}
	np.Changes = append(np.Changes, ch)
}

// desired compares each object the file wants with the cluster's.
func (c *computation) desired() {
	in := c.in
	for _, d := range in.Desired {
		k := KeyOf(d)
		c.wanted[k] = true
		node := nodeOf(d)
		c.desiredNodes[node] = true
		if c.byNode[node] == nil {
			c.byNode[node] = &NodePlan{Node: node}
		}
		live := in.Live[k]
		switch {
		case live == nil && in.Foreign[k] != nil:
			c.add(node, conflict(k, in.Foreign[k], in.Group))
		case live == nil:
			c.add(node, Change{Key: k, Action: Create})
		case live.GetDeletionTimestamp() != nil:
			c.add(node, terminating(k, live, node))
		case in.Immutable[k] != "":
			c.add(node, Change{Key: k, Action: Replace, Destructive: k.Kind == "PersistentVolumeClaim",
				Reason: in.Immutable[k], Diff: Diff(live, d), ResourceVersion: live.GetResourceVersion(), UID: string(live.GetUID())})
		case in.Unchanged[k] || Subset(d.Object, live.Object):
			// unchanged
		default:
			after := in.DryRun[k]
			if after == nil {
				after = d
			}
			if diff := Diff(live, after); len(diff) > 0 {
				c.add(node, Change{Key: k, Action: Update, Diff: diff, ResourceVersion: live.GetResourceVersion(), UID: string(live.GetUID())})
			}
		}
	}
}

// followAll makes a node's Deployment that is as desired but did not become ready an update:
// apply waits for its rollout and rolls it back when it fails (SPEC §6).
func (c *computation) followAll() {
	c.follow(c.in.Failed, func(msg string) string { return "its last rollout failed (" + msg + "): apply tries it again" })
	if !c.in.Suspended {
		c.follow(c.in.Interrupted, func(string) string { return InterruptedReason })
		c.follow(c.in.NotReady, func(msg string) string {
			return "it is not ready (" + msg + "): apply waits for it and rolls it back when it fails"
		})
	}
}

func (c *computation) follow(nodes map[string]string, reason func(msg string) string) {
	for _, node := range sortedKeys(nodes) {
		k := Key{Kind: "Deployment", Namespace: c.in.Namespace, Name: node}
		live := c.in.Live[k]
		if !c.wanted[k] || live == nil || hasChange(c.byNode[node], k) {
			continue
		}
		c.add(node, Change{Key: k, Action: Update, ResourceVersion: live.GetResourceVersion(), UID: string(live.GetUID()), Reason: reason(nodes[node])})
	}
}

// deletions lists the group's live objects the file no longer wants.
func (c *computation) deletions() {
	for k, live := range c.in.Live {
		if c.wanted[k] || k.Kind == "Namespace" {
			continue
		}
		node := nodeOf(live)
		ch := Change{Key: k, Action: Delete, ResourceVersion: live.GetResourceVersion(), UID: string(live.GetUID())}
		if k.Kind == "PersistentVolumeClaim" {
			ch.Destructive = true
			ch.Reason = "the node's state on /var/lib is lost"
		}
		c.add(node, ch)
		if !c.desiredNodes[node] {
			c.byNode[node].Removed = true
		}
	}
}

// drift lists the nodes whose cluster runs another image than the state recorded, and while
// suspended the rollouts in flight that resume follows.
func (c *computation) drift() []Drift {
	in := c.in
	var out []Drift
	planned := map[string]string{}
	for _, im := range in.Images {
		if im.Name == im.Node {
			planned[im.Node] = im.Digest
		}
	}
	for _, node := range sortedKeys(in.StateImages) {
		want, run := in.StateImages[node], in.RunningImages[node]
		_, rolledBack := in.RolledBack[node]
		pending := rolledBack && c.byNode[node] != nil && len(c.byNode[node].Changes) > 0
		if run == "" || want == "" || (run == want && !pending) {
			continue
		}
		if planned[node] == run && !hasChange(c.byNode[node], Key{Kind: "Deployment", Namespace: in.Namespace, Name: node}) {
			// The file wants what runs (a rolled-back change reverted): apply rolls nothing
			// out; it only brings the state up to date.
			continue
		}
		out = append(out, Drift{Node: node, Running: run, State: want, Note: driftNote(in, node)})
	}
	if in.Suspended {
		// Nothing runs while suspended: resume is what rolls the template out.
		for _, node := range sortedKeys(in.Interrupted) {
			run := in.RunningImages[node]
			if slices.ContainsFunc(out, func(d Drift) bool { return d.Node == node }) {
				continue
			}
			out = append(out, Drift{Node: node, Running: run, State: run, Note: SuspendedPendingNote})
		}
	}
	return out
}

func driftNote(in Input, node string) string {
	if _, ok := in.Interrupted[node]; ok {
		if in.Suspended {
			return SuspendedPendingNote
		}
		return InterruptedReason
	}
	if msg, ok := in.RolledBack[node]; ok {
		return "the last rollout was rolled back (" + msg + "): apply tries it again"
	}
	return "the cluster runs another image than the state recorded (a hand edit?): apply rolls out again"
}

// Notes of a rollout the state says is in flight.
const (
	InterruptedReason    = "a rollout was interrupted: apply follows it again (waits for it, and rolls it back when it fails)"
	SuspendedPendingNote = "its template has not run ready yet: resume rolls it out, waits for it, and rolls it back when it fails"
)

func hasChange(np *NodePlan, k Key) bool {
	if np == nil {
		return false
	}
	for _, c := range np.Changes {
		if c.Key == k {
			return true
		}
	}
	return false
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}
