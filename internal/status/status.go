// Package status decides, from Kubernetes objects alone, whether the rollout of a Deployment is
// progressing, ready or has failed, and why (SPEC §6 steps 4, 6 and 7).
//
// It is pure: the caller lists the Deployment, its ReplicaSets, pods and events and passes them
// in with the current time; nothing here talks to a cluster or reads a clock, so the same input
// always gives the same Result.
//
// It assumes what the rest of slipway guarantees or Kubernetes does by default:
//   - Deployments are managed by the standard deployment controller, whose ReplicaSets carry
//     the pod-template-hash label and the deployment.kubernetes.io/revision annotation;
//   - the objects passed in are a reasonably recent view (an informer cache or a list), so a
//     count that lags catches up on a later call: no decision here is final until Phase is
//     Ready or Failed;
//   - pods in phase Succeeded or Failed hold nothing and will not run again, as the ReplicaSet
//     controller assumes, so they are not counted as present; a pod with a deletionTimestamp is
//     still present (its containers may be running and it may hold the node's volume).
package status

import (
	"fmt"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// Phase is where a rollout stands.
type Phase string

const (
	Progressing Phase = "progressing"
	Ready       Phase = "ready"
	Failed      Phase = "failed"
)

// Reasons set in Result.Reason. On a Progressing result the reason, when set, names what the
// rollout is waiting on (a pull still within its grace, an unschedulable pod, a pod not ready
// yet); callers branch on Phase, never on a progressing Reason.
const (
	ReasonCrashLoopBackOff           = "CrashLoopBackOff"
	ReasonErrImagePull               = "ErrImagePull"
	ReasonImagePullBackOff           = "ImagePullBackOff"
	ReasonContainerExited            = "ContainerExited"
	ReasonCreateContainerConfigError = "CreateContainerConfigError"
	ReasonCreateContainerError       = "CreateContainerError"
	ReasonInvalidImageName           = "InvalidImageName"
	ReasonFailedCreate               = "FailedCreate"
	ReasonUnschedulable              = "Unschedulable"
	ReasonProgressDeadlineExceeded   = "ProgressDeadlineExceeded"
	ReasonNotReady                   = "NotReady"
	ReasonTimeout                    = "Timeout"
)

// DefaultPullGrace is how long an image pull error may last before it counts as certain when
// Input.PullGrace is 0: long enough for a registry hiccup to clear on the kubelet's first
// retry, short enough that a missing image fails the rollout in seconds, not at the limit.
const DefaultPullGrace = 10 * time.Second

const (
	revisionAnnotation = "deployment.kubernetes.io/revision"
	hashLabel          = appsv1.DefaultDeploymentUniqueLabelKey // pod-template-hash
)

// Result is the state of one rollout.
type Result struct {
	Phase Phase
	// Reason is a short machine word: CrashLoopBackOff, ErrImagePull, ImagePullBackOff,
	// ContainerExited, CreateContainerConfigError, CreateContainerError, InvalidImageName,
	// FailedCreate, Unschedulable, ProgressDeadlineExceeded, NotReady or Timeout.
	Reason string
	// Message is one sentence naming the pod and container and the cause, e.g.
	// "pod web-7c9f-abcde: container node: back-off restarting failed container (restarts 3)".
	Message string
	// Pod is the pod the reason is about, if any.
	Pod string
	// Ready is the number of ready pods of the new ReplicaSet, Desired the Deployment's
	// replicas, Updated the pods of the new template (not terminating).
	Ready, Desired, Updated int32
	// OldPods is the number of pods of older ReplicaSets still present, terminating included.
	OldPods int32
}

// Input is what a rollout is judged from.
type Input struct {
	Deployment *appsv1.Deployment
	// ReplicaSets owned by the Deployment; others (e.g. all of the namespace) are ignored.
	ReplicaSets []*appsv1.ReplicaSet
	// Pods of the namespace or of the Deployment; those of other owners are ignored.
	Pods []*corev1.Pod
	// Events of the namespace; only those about the Deployment, its ReplicaSets and pods count.
	Events []*corev1.Event
	Now    time.Time
	// Since is when this rollout was started (the apply), Limit the rollout time limit. With a
	// zero Since or a Limit <= 0 there is no limit: the rollout never times out.
	Since time.Time
	Limit time.Duration
	// PullGrace is how long ErrImagePull or ImagePullBackOff may last before the failure is
	// certain; DefaultPullGrace when 0.
	PullGrace time.Duration
	// Optional names containers whose state is never a reason for a failed rollout and never
	// keeps a pod from counting ready: a role's companion (FR-004g), which has no probe
	// because its work must not stop a rollout. A pod counts ready when its other containers
	// and its native sidecars are. (Kubernetes itself still counts the pod not ready while such
	// a container is down, and takes it out of its Services' endpoints meanwhile.)
	Optional []string
}

// Rollout judges the rollout of in.Deployment's current pod template: Ready when the new
// ReplicaSet has all desired replicas ready and no pod of an older one remains; Failed as soon
// as the outcome is certain (a crash loop, an exited container, an image that cannot be pulled
// beyond PullGrace, pods that cannot be created, the progress deadline exceeded) or when the
// limit is used up; Progressing otherwise.
func Rollout(in Input) Result {
	d := in.Deployment
	if d == nil {
		return in.waiting(Result{}, "", "deployment not found")
	}
	desired := replicas(d.Spec.Replicas)
	if d.Status.ObservedGeneration < d.Generation {
		// Everything in the status, conditions included, describes the previous spec.
		return in.waiting(Result{Desired: desired}, "", fmt.Sprintf("deployment %s: generation %d not yet observed by the controller (observed %d)", d.Name, d.Generation, d.Status.ObservedGeneration))
	}
	v := newView(in)
	r := v.counts()
	if desired == 0 {
		// A Deployment at 0 replicas is rolled out when nothing of it runs any more.
		return in.scaledDown(v, r)
	}

	// Certain failures first, the most specific first: a pod's own cause names the container;
	// the Deployment's conditions only summarize it.
	grace := in.PullGrace
	if grace <= 0 {
		grace = DefaultPullGrace
	}
	var pending *issue
	for _, p := range v.newPods {
		is := inspectPod(p, in, grace)
		if is == nil {
			continue
		}
		if is.certain {
			return is.result(Failed, r)
		}
		if pending == nil || is.rank < pending.rank {
			pending = is
		}
	}
	if reason, msg := controllerFailure(d, v.newRS); reason != "" && !v.optionalStalled(reason, desired, r) {
		r.Phase, r.Reason, r.Message = Failed, reason, msg
		return r
	}

	missing := v.missing(desired, r)
	if len(missing) == 0 {
		r.Phase = Ready
		r.Message = fmt.Sprintf("%d of %d pods ready", r.Ready, desired)
		return r
	}
	if in.expired() {
		if pending != nil {
			// The limit turns what was still uncertain into the cause.
			return pending.expire(in.Limit).result(Failed, r)
		}
		r.Phase, r.Reason = Failed, ReasonTimeout
		r.Message = fmt.Sprintf("not ready within %s: %s", in.Limit, strings.Join(missing, "; "))
		// Name the first pod still short of ready, so that the report shows its events
		// (e.g. a volume that cannot attach while the pod waits in ContainerCreating).
		for _, p := range v.newPods {
			if p.DeletionTimestamp == nil && !readyBut(p, in.Optional) {
				r.Pod = p.Name
				r.Message += fmt.Sprintf(" (pod %s: %s)", p.Name, podState(p))
				break
			}
		}
		return r
	}
	if pending != nil {
		return pending.result(Progressing, r)
	}
	r.Phase, r.Message = Progressing, strings.Join(missing, "; ")
	return r
}

// controllerFailure is the failure the new ReplicaSet's or the Deployment's conditions report
// (pods that cannot be created, the progress deadline passed), "" when none.
func controllerFailure(d *appsv1.Deployment, newRS *appsv1.ReplicaSet) (reason, msg string) {
	if newRS != nil {
		if c := rsCondition(newRS, appsv1.ReplicaSetReplicaFailure); c != nil && c.Status == corev1.ConditionTrue && c.Reason == ReasonFailedCreate {
			return ReasonFailedCreate, fmt.Sprintf("replica set %s: %s", newRS.Name, oneLine(c.Message))
		}
	}
	if c := deploymentCondition(d, appsv1.DeploymentReplicaFailure); c != nil && c.Status == corev1.ConditionTrue && c.Reason == ReasonFailedCreate {
		return ReasonFailedCreate, fmt.Sprintf("deployment %s: %s", d.Name, oneLine(c.Message))
	}
	if c := deploymentCondition(d, appsv1.DeploymentProgressing); c != nil && c.Status == corev1.ConditionFalse && c.Reason == ReasonProgressDeadlineExceeded {
		return ReasonProgressDeadlineExceeded, fmt.Sprintf("deployment %s: progress deadline exceeded: %s", d.Name, oneLine(c.Message))
	}
	return "", ""
}

// ScaledDown judges the scaling of a Deployment to 0 replicas (a role stopped before its node's
// image changes, or a suspend): Ready when no pod of the Deployment remains, terminating pods
// included; Failed with reason Timeout when the limit is used up; Progressing otherwise.
func ScaledDown(in Input) Result {
	d := in.Deployment
	if d == nil {
		return in.waiting(Result{}, "", "deployment not found")
	}
	desired := replicas(d.Spec.Replicas)
	if desired != 0 {
		// The caller holds a Deployment whose scale-down has not been applied: waiting on it
		// for no pods would end only when something else scales it.
		return in.waiting(Result{Desired: desired}, "", fmt.Sprintf("deployment %s: wants %d %s, not 0", d.Name, desired, plural(desired, "replica", "replicas")))
	}
	if d.Status.ObservedGeneration < d.Generation {
		return in.waiting(Result{}, "", fmt.Sprintf("deployment %s: generation %d not yet observed by the controller (observed %d)", d.Name, d.Generation, d.Status.ObservedGeneration))
	}
	v := newView(in)
	return in.scaledDown(v, v.counts())
}

func (in Input) scaledDown(v *view, r Result) Result {
	var missing []string
	for _, rs := range v.owned {
		// A ReplicaSet not yet scaled to 0 may still create a pod after every pod is gone.
		if n := replicas(rs.Spec.Replicas); n != 0 {
			missing = append(missing, fmt.Sprintf("replica set %s still wants %d %s", rs.Name, n, plural(n, "pod", "pods")))
		}
	}
	all := slices.Concat(v.newPods, v.oldPods)
	if n := int32(len(all)); n > 0 {
		names := make([]string, 0, len(all))
		for _, p := range all {
			names = append(names, p.Name)
		}
		slices.Sort(names)
		missing = append(missing, fmt.Sprintf("%d %s still present (%s)", n, plural(n, "pod", "pods"), strings.Join(names, ", ")))
	}
	if len(missing) == 0 {
		r.Phase, r.Message = Ready, "no pods remain"
		return r
	}
	return in.waiting(r, "", strings.Join(missing, "; "))
}

// waiting is Progressing with the given reason and message, or Failed(Timeout) saying what was
// missing when the limit is used up.
func (in Input) waiting(r Result, reason, msg string) Result {
	if in.expired() {
		r.Phase, r.Reason, r.Message = Failed, ReasonTimeout, fmt.Sprintf("not done within %s: %s", in.Limit, msg)
		return r
	}
	r.Phase, r.Reason, r.Message = Progressing, reason, msg
	return r
}

func (in Input) expired() bool {
	return in.Limit > 0 && !in.Since.IsZero() && in.Now.Sub(in.Since) >= in.Limit
}
