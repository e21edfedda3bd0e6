// Package event holds what the engine reports and printers render: progress events with their
// phases, image progress, and the outcome of a node's rollout. It is a leaf: it imports nothing
// of slipway, so that internal/ui prints without linking the engine, the state or client-go.
package event

import "time"

// Phase says where a node is.
type Phase string

const (
	PhasePlan       Phase = "plan"
	PhasePush       Phase = "push"
	PhaseApply      Phase = "apply"
	PhaseStopRoles  Phase = "stop-roles"
	PhaseRollout    Phase = "rollout"
	PhaseRollback   Phase = "rollback"
	PhaseStartRoles Phase = "start-roles"
	PhasePrune      Phase = "prune"
	PhaseScale      Phase = "scale"
	PhaseDestroy    Phase = "destroy"
	PhaseDone       Phase = "done"
	PhaseFailed     Phase = "failed"
	PhaseUnchanged  Phase = "unchanged"
	// PhaseBlocked: a group of a waves file did not run, because a group it waits on failed.
	PhaseBlocked Phase = "blocked"
)

// Event reports progress. Node "" is the group.
type Event struct {
	Time time.Time `json:"time"`
	// Group is the group of a waves file the event is about; "" outside a waves run.
	Group   string `json:"group,omitempty"`
	Node    string `json:"node,omitempty"`
	Phase   Phase  `json:"phase"`
	Message string `json:"message,omitempty"`
	Ready   int32  `json:"ready"`
	Desired int32  `json:"desired"`
	Image   *Image `json:"image,omitempty"`
}

// ImageKind says what an Image event reports.
type ImageKind string

const (
	ImageBuilt    ImageKind = "built"    // the image's tag is known
	ImageWarning  ImageKind = "warning"  // Message says what was skipped
	ImageExists   ImageKind = "exists"   // the registry has the tag: nothing to upload
	ImageProgress ImageKind = "progress" // Done of Total bytes uploaded
	ImagePushed   ImageKind = "pushed"   // Digest is set
)

// Image reports the progress of building or pushing one image.
type Image struct {
	Name    string    `json:"name"`
	Kind    ImageKind `json:"kind"`
	Ref     string    `json:"ref,omitempty"` // the tag reference, once known
	Message string    `json:"message,omitempty"`
	Done    int64     `json:"done,omitempty"`
	Total   int64     `json:"total,omitempty"`
	Digest  string    `json:"digest,omitempty"`
}

// Rollout results.
const (
	RolloutReady      = "ready"
	RolloutRolledBack = "rolled-back"
	RolloutFailed     = "failed"
	// RolloutInProgress is written before a Deployment's pod template changes (or before a
	// resume scales a template up that never ran): until the rollout ends, ready or set back,
	// the state says that one is in flight, so a run interrupted at any point leaves a state
	// whose next apply follows that rollout again. An apply while the group is suspended
	// leaves it in place: the template has not run, resume rolls it out.
	RolloutInProgress = "in-progress"
)

// Rollout is the outcome of a node's last rollout, as the state records it.
type Rollout struct {
	Result  string    `json:"result"`
	Time    time.Time `json:"time"`
	Message string    `json:"message,omitempty"`
	Digest  string    `json:"digest,omitempty"`
}
