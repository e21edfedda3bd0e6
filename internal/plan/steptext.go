package plan

import (
	"fmt"
	"strings"

	"slipway.dev/slipway/internal/spec"
)

// String says what the step does, as `plan` prints it.
func (s Step) String() string {
	if s.Payload != nil {
		return s.Payload.StepText()
	}
	switch s.Kind {
	case StepPush:
		return "push image " + s.Image
	case StepApplyObjects:
		return "apply " + names(s.Objects)
	case StepStopRole:
		return fmt.Sprintf("stop role %s (Deployment %s to 0 replicas)", s.Role, s.Object.Name)
	case StepApplyDeployment:
		if s.Migration != nil {
			return fmt.Sprintf("%s Deployment %s (state migration %s: its init container %s copies /var/lib on the volume before the node starts)", s.Action, s.Object.Name, migrationText(s.Migration), spec.InitContainerState)
		}
		return fmt.Sprintf("%s Deployment %s", s.Action, s.Object.Name)
	case StepAwaitRollout:
		back := "on failure roll back to the last template that ran ready"
		if s.Migration != nil {
			back += ", which puts the copy of /var/lib back first; the state keeps version " + quoted(s.Migration.From)
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
		return fmt.Sprintf("remove the copy of /var/lib from the volume (Job %s on the pod's host; the data stays at state version %s; limit %s)", s.Object.Name, s.StateVersion, s.Limit)
	case StepPrune:
		return "delete " + names(s.Objects)
	case StepRemoveNode:
		return "remove node " + s.Node + ": delete " + names(s.Objects)
	case StepRetireDNS:
		return "retire dns " + recordNames(s.Records)
	case StepPublishDNS:
		return "publish dns " + recordNames(s.Records) + " (one UPDATE each, after the address is known)"
	case StepAwaitAddress:
		return fmt.Sprintf("await the load-balancer address of Service %s (limit %s)", s.Object.Name, s.Limit)
	case StepAwaitAccepted:
		return fmt.Sprintf("await %s Accepted by the Gateway (limit %s)", names(s.Objects), s.Limit)
	case StepAwaitClaim:
		return fmt.Sprintf("await claim %s bound, when its StorageClass binds claims as they are made (limit %s)", s.Object.Name, s.Limit)
	case StepAwaitResolved:
		return fmt.Sprintf("await the references of %s resolved (limit %s)", names(s.Objects), s.Limit)
	}
	return string(s.Kind)
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

// recordNames lists record sets by name, a mail set with its kind.
func recordNames(rs []RecordChange) string {
	parts := make([]string, len(rs))
	for i, r := range rs {
		parts[i] = r.Name
		if r.Kind != "address" {
			parts[i] += " (" + r.Kind + ")"
		}
	}
	return strings.Join(parts, ", ")
}
