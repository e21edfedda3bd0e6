package status

import "slipway.dev/slipway/internal/event"

// Absent is the Phase of a node or role whose Deployment does not exist (a status report,
// never a rollout's result).
const Absent Phase = "absent"

// Suspended is the Phase of a node of a suspended group whose Deployment is at 0 replicas with
// no pod left: nothing runs, its template (perhaps one applied while suspended) is not ready.
const Suspended Phase = "suspended"

// Group is what `slipway status` reports: per node what the state wants, what the
// cluster runs, and how the last rollout ended.
type Group struct {
	Group     string `json:"group"`
	Namespace string `json:"namespace"`
	// Applied is false when the state holds no document: nothing was applied yet.
	Applied     bool  `json:"applied"`
	StateSerial int64 `json:"stateSerial"`
	Suspended   bool  `json:"suspended"`
	// AdoptsFrom is the key of an earlier release whose state (and objects, labelled with
	// it) the deployment's next plan or apply adopts (issue 46); "" when none.
	AdoptsFrom string `json:"adoptsFrom,omitempty"`
	Nodes      []Node `json:"nodes"`
}

// Node is one node of a Group.
type Node struct {
	Node string `json:"node"`
	// DesiredImage is the image (ref@digest) the state recorded as desired, Desired its digest.
	DesiredImage string `json:"desiredImage,omitempty"`
	Desired      string `json:"desired,omitempty"`
	// RunningImage is the image the live Deployment names, Running its digest; both empty
	// when the Deployment does not exist.
	RunningImage string `json:"runningImage,omitempty"`
	Running      string `json:"running,omitempty"`
	// Drift: the cluster runs another digest than the state wants (after a rollback, or a
	// hand edit); the next apply rolls out again.
	Drift bool `json:"drift"`
	// Ready pods of the current template, of Replicas (the Deployment's spec.replicas).
	Ready    int32 `json:"ready"`
	Replicas int32 `json:"replicas"`
	// Phase of the Deployment's current template: ready, progressing or failed (with Reason
	// and Message), or absent when the Deployment does not exist.
	Phase       Phase          `json:"phase"`
	Reason      string         `json:"reason,omitempty"`
	Message     string         `json:"message,omitempty"`
	Roles       []Role         `json:"roles,omitempty"`
	LastRollout *event.Rollout `json:"lastRollout,omitempty"`
	Suspended   bool           `json:"suspended"`
	// Protected: the node's claim is protected (state.protect; the state's for a node that
	// left the file): plan refuses to delete it (SPEC §6a).
	Protected bool `json:"protected"`
	// StateVersion is the state version the node last ran ready with, as the state recorded
	// it (SPEC §6a); "" when it has none.
	StateVersion string `json:"stateVersion,omitempty"`
	// Copy is the copy of /var/lib the state says the node's volume holds: a migration's
	// backup until it runs ready, then until the removal Job removed it.
	Copy *StateCopy `json:"copy,omitempty"`
	// InFile is false for a node the state or the cluster holds but the group file no longer
	// names (the next apply removes it).
	InFile bool `json:"inFile"`
	// InState is false for a node not applied yet.
	InState bool `json:"inState"`
	// Names are the node's published names, with `publish:` (SPEC §7).
	Names []string `json:"names,omitempty"`
	// Address is what the names point at: the Gateway's addresses for a node behind it, else
	// its Service's load-balancer ingress; none while it has none.
	Address []string `json:"address,omitempty"`
	// DNS says whether the DNS server holds what the group publishes for the node (SPEC §7):
	// "agrees", or what differs; "" when the node publishes nothing.
	DNS string `json:"dns,omitempty"`
}

// Role is one role of a Node.
type Role struct {
	Name string `json:"name"`
	// Ready pods of the current template, of Replicas (the Deployment's spec.replicas).
	Ready    int32 `json:"ready"`
	Replicas int32 `json:"replicas"`
	// Want is the number of replicas the role runs when started (the state's, else the file's).
	Want    int32  `json:"want"`
	Phase   Phase  `json:"phase"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
}

// StateCopy is a copy of /var/lib taken at state version From before the migration to To.
type StateCopy struct {
	From string `json:"from"`
	To   string `json:"to"`
	// Removable: the migration to To ran ready, so the copy is no backup any more; the next
	// apply removes it. Otherwise a failed rollout to To puts it back.
	Removable bool `json:"removable"`
}
