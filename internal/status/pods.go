package status

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// issue is what one pod of the new ReplicaSet tells about the rollout.
type issue struct {
	pod, reason string
	detail      string // the message after "pod <name>: "
	// certain issues fail the rollout now; the others are what it waits on, and become its
	// cause when the limit is used up.
	certain bool
	// rank orders uncertain issues by how well they explain a rollout that ran out of time:
	// a pull error beats an unschedulable pod, which beats a pod that is merely not ready.
	rank    int
	atLimit func(limit time.Duration) string
}

func (is *issue) result(phase Phase, r Result) Result {
	r.Phase, r.Reason, r.Pod = phase, is.reason, is.pod
	r.Message = fmt.Sprintf("pod %s: %s", is.pod, is.detail)
	return r
}

// expire is the issue as the cause of a rollout that ran out of time.
func (is *issue) expire(limit time.Duration) *issue {
	c := *is
	c.certain = true
	if is.atLimit != nil {
		c.detail = is.atLimit(limit)
	}
	return &c
}

const (
	rankPull = iota
	rankUnschedulable
	rankNotReady
)

// inspectPod is the most telling issue of a pod of the new ReplicaSet, or nil when it has
// none (it is ready, or still being set up in an ordinary way).
func inspectPod(p *corev1.Pod, in Input, grace time.Duration) *issue {
	if p.DeletionTimestamp != nil {
		// A pod being deleted stops its containers on purpose: their exits say nothing about
		// the new template, and the controller replaces the pod.
		return nil
	}
	var pending *issue
	keep := func(is *issue) {
		if is != nil && (pending == nil || is.rank < pending.rank) {
			pending = is
		}
	}
	all := slices.DeleteFunc(containersOf(p), func(c podContainer) bool { return slices.Contains(in.Optional, c.cs.Name) })
	for _, c := range all {
		is := containerIssue(p, c, in, grace)
		if is != nil && is.certain {
			return is
		}
		keep(is)
	}
	if c := podCondition(p, corev1.PodScheduled); c != nil && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
		// The cluster may gain room (an autoscaler, a pod going away): wait for the limit.
		msg := suffix(c.Message)
		keep(&issue{pod: p.Name, reason: ReasonUnschedulable, rank: rankUnschedulable,
			detail:  "not scheduled" + msg,
			atLimit: func(limit time.Duration) string { return fmt.Sprintf("not scheduled within %s%s", limit, msg) }})
	}
	keep(notReadyIssue(p, all, in.Optional))
	return pending
}

// podContainer is one container status of a pod and the kind of container it is of.
type podContainer struct {
	kind string // "init container" or "container"
	cs   *corev1.ContainerStatus
}

func containersOf(p *corev1.Pod) []podContainer {
	var all []podContainer
	for i := range p.Status.InitContainerStatuses {
		all = append(all, podContainer{"init container", &p.Status.InitContainerStatuses[i]})
	}
	for i := range p.Status.ContainerStatuses {
		all = append(all, podContainer{"container", &p.Status.ContainerStatuses[i]})
	}
	return all
}

// containerIssue is the issue of one container, nil when it has none. A certain one ends the
// pod's inspection; a pull failing within the grace is kept while the others are looked at.
func containerIssue(p *corev1.Pod, c podContainer, in Input, grace time.Duration) *issue {
	cs := c.cs
	who := fmt.Sprintf("%s %s", c.kind, cs.Name)
	if w := cs.State.Waiting; w != nil {
		switch w.Reason {
		case ReasonCrashLoopBackOff:
			// The kubelet only backs off after the container failed; it will fail again.
			return &issue{pod: p.Name, reason: w.Reason, certain: true,
				detail: fmt.Sprintf("%s: back-off restarting failed container (%s)", who, restarts(cs))}
		case ReasonCreateContainerConfigError, ReasonCreateContainerError, ReasonInvalidImageName:
			// A missing Secret or ConfigMap key, a bad image reference, a runtime refusing
			// the container: the template itself is wrong, retrying will not help.
			return &issue{pod: p.Name, reason: w.Reason, certain: true,
				detail: fmt.Sprintf("%s: cannot start (%s)%s", who, w.Reason, suffix(w.Message))}
		case ReasonErrImagePull, ReasonImagePullBackOff:
			// A pull may fail once on a registry hiccup and succeed on the retry; only a
			// failure that outlasts the grace is certain. The cluster gives no start time
			// per container state, so measure from the first pull failure event, or from
			// the pod's creation when there is none.
			return &issue{pod: p.Name, reason: w.Reason, rank: rankPull,
				certain: in.Now.Sub(pullStart(p, in.Events)) > grace,
				detail:  fmt.Sprintf("%s: cannot pull image %q (%s)%s", who, cs.Image, w.Reason, suffix(w.Message))}
		}
	}
	if t := cs.State.Terminated; t != nil && t.ExitCode != 0 {
		return &issue{pod: p.Name, reason: ReasonContainerExited, certain: true,
			detail: fmt.Sprintf("%s: exited with code %d%s%s", who, t.ExitCode, exitReason(t.Reason), suffix(t.Message))}
	}
	return nil
}

// notReadyIssue is the issue of a pod that runs but is not ready, nil when it is ready (but for
// its optional containers) or not running yet; all are its containers but the optional ones. A readiness probe may fail for a while (a system still booting): it waits for
// the limit.
func notReadyIssue(p *corev1.Pod, all []podContainer, optional []string) *issue {
	if readyBut(p, optional) {
		return nil
	}
	msg := ""
	if c := podCondition(p, corev1.PodReady); c != nil {
		msg = suffix(c.Message)
	}
	who := ""
	for _, c := range all {
		if c.cs.State.Running != nil && !c.cs.Ready {
			who = fmt.Sprintf("%s %s: ", c.kind, c.cs.Name)
			break
		}
	}
	if who == "" && p.Status.Phase != corev1.PodRunning {
		return nil
	}
	return &issue{pod: p.Name, reason: ReasonNotReady, rank: rankNotReady,
		detail: who + "not ready yet" + msg,
		atLimit: func(limit time.Duration) string {
			return fmt.Sprintf("%sdid not become ready within %s%s", who, limit, msg)
		}}
}

// pullStart is when a pod's image pull started failing: its first pull failure event, or its
// creation.
func pullStart(p *corev1.Pod, events []*corev1.Event) time.Time {
	start := p.CreationTimestamp.Time
	first := time.Time{}
	for _, e := range events {
		if e == nil || !aboutPod(e, p.Namespace, p.Name, p.UID) {
			continue
		}
		switch e.Reason {
		case "Failed", "BackOff", ReasonErrImagePull, ReasonImagePullBackOff:
		default:
			continue
		}
		// The kubelet's pull events: "Failed to pull image …", "Error: ErrImagePull",
		// "Back-off pulling image …", "Error: ImagePullBackOff"; its crash loop back-off
		// event has the same reason but no pull.
		if !strings.Contains(strings.ToLower(e.Message), "pull") {
			continue
		}
		if t := firstSeen(e); !t.IsZero() && (first.IsZero() || t.Before(first)) {
			first = t
		}
	}
	if !first.IsZero() {
		return first
	}
	return start
}

func restarts(cs *corev1.ContainerStatus) string {
	s := fmt.Sprintf("restarts %d", cs.RestartCount)
	if t := cs.LastTerminationState.Terminated; t != nil {
		s += fmt.Sprintf(", last exit code %d%s", t.ExitCode, exitReason(t.Reason))
	}
	return s
}

// exitReason adds a termination reason that says more than "Error" (e.g. OOMKilled).
func exitReason(reason string) string {
	if reason == "" || reason == "Error" {
		return ""
	}
	return " (" + oneLine(reason) + ")"
}

// suffix is ": message" on one line, or nothing when there is no message.
func suffix(msg string) string {
	if msg = oneLine(msg); msg == "" {
		return ""
	}
	return ": " + msg
}

// podState says in a few words where a pod stands: its phase, and the first container that
// waits, with the reason.
func podState(p *corev1.Pod) string {
	s := strings.ToLower(string(cmp.Or(p.Status.Phase, corev1.PodPending)))
	for _, cs := range slices.Concat(p.Status.InitContainerStatuses, p.Status.ContainerStatuses) {
		if w := cs.State.Waiting; w != nil && w.Reason != "" {
			return fmt.Sprintf("%s, container %s waiting (%s)", s, cs.Name, oneLine(w.Reason))
		}
	}
	return s
}
