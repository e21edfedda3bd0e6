package plan

import (
	"fmt"
	"strings"
)

// String says what the step does, as `plan` prints it. A lane's payload says it: all of a
// step of the lane's own (spire, central, dns), or the lane's share of a step whose line is
// another's (a migration's on the rollout's steps, the version a remove-copy keeps), which
// String puts in its place.
func (s Step) String() string {
	var lane string
	if s.Payload != nil {
		lane = s.Payload.StepText()
	}
	switch s.Kind {
	case StepPush:
		return "push image " + s.Image
	case StepApplyObjects:
		return "apply " + names(s.Objects)
	case StepStopRole:
		return fmt.Sprintf("stop role %s (Deployment %s to 0 replicas)", s.Role, s.Object.Name)
	case StepApplyDeployment:
		return fmt.Sprintf("%s Deployment %s", s.Action, s.Object.Name) + parenthesized(lane)
	case StepAwaitRollout:
		back := "on failure roll back to the last template that ran ready"
		if lane != "" {
			back += ", " + lane
		}
		if s.Rollback == RollbackNone {
			back = "nothing to roll back to"
		}
		return fmt.Sprintf("await rollout of %s (%s, limit %s; %s)", s.Object.Name, replicasText(s.Replicas), s.Limit, back)
	case StepAwaitReady:
		return fmt.Sprintf("await %s ready before starting its roles (limit %s)", s.Object.Name, s.Limit)
	case StepStartRole:
		what := "Deployment " + s.Object.Name
		if s.Action != "" {
			what = string(s.Action) + " " + what
		}
		if s.Rollback == RollbackLastReady {
			return fmt.Sprintf("roll role %s without a stop (%s, %s, limit %s; on failure set back to its last ready template)", s.Role, what, replicasText(s.Replicas), s.Limit)
		}
		return fmt.Sprintf("start role %s (%s, %s, limit %s)", s.Role, what, replicasText(s.Replicas), s.Limit)
	case StepRemoveCopy:
		where := "Job " + s.Object.Name + " on the pod's host"
		if lane != "" {
			where += "; " + lane
		}
		return fmt.Sprintf("remove the copy of /var/lib from the volume (%s; limit %s)", where, s.Limit)
	case StepPrune:
		return "delete " + names(s.Objects)
	case StepRemoveNode:
		return "remove node " + s.Node + ": delete " + names(s.Objects)
	case StepAwaitAddress:
		return fmt.Sprintf("await the load-balancer address of Service %s (limit %s)", s.Object.Name, s.Limit)
	case StepAwaitAccepted:
		return fmt.Sprintf("await %s Accepted by the Gateway (limit %s)", names(s.Objects), s.Limit)
	case StepAwaitClaim:
		return fmt.Sprintf("await claim %s bound, when its StorageClass binds claims as they are made (limit %s)", s.Object.Name, s.Limit)
	case StepAwaitResolved:
		return fmt.Sprintf("await the references of %s resolved (limit %s)", names(s.Objects), s.Limit)
	}
	if lane != "" {
		return lane
	}
	return string(s.Kind)
}

// parenthesized is " (text)", "" for no text.
func parenthesized(text string) string {
	if text == "" {
		return ""
	}
	return " (" + text + ")"
}

func replicasText(n int32) string {
	if n == 1 {
		return "1 replica"
	}
	return fmt.Sprintf("%d replicas", n)
}

// names lists objects as "Kind name" (the namespace is the plan's).
func names(ks []Key) string {
	parts := make([]string, len(ks))
	for i, k := range ks {
		parts[i] = k.Kind + " " + k.Name
	}
	return strings.Join(parts, ", ")
}
