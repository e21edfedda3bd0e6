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
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
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
	if v.newRS != nil {
		if c := rsCondition(v.newRS, appsv1.ReplicaSetReplicaFailure); c != nil && c.Status == corev1.ConditionTrue && c.Reason == ReasonFailedCreate {
			r.Phase, r.Reason, r.Message = Failed, ReasonFailedCreate, fmt.Sprintf("replica set %s: %s", v.newRS.Name, oneLine(c.Message))
			return r
		}
	}
	if c := deploymentCondition(d, appsv1.DeploymentReplicaFailure); c != nil && c.Status == corev1.ConditionTrue && c.Reason == ReasonFailedCreate {
		r.Phase, r.Reason, r.Message = Failed, ReasonFailedCreate, fmt.Sprintf("deployment %s: %s", d.Name, oneLine(c.Message))
		return r
	}
	if c := deploymentCondition(d, appsv1.DeploymentProgressing); c != nil && c.Status == corev1.ConditionFalse && c.Reason == ReasonProgressDeadlineExceeded {
		r.Phase, r.Reason, r.Message = Failed, ReasonProgressDeadlineExceeded, fmt.Sprintf("deployment %s: progress deadline exceeded: %s", d.Name, oneLine(c.Message))
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
			if p.DeletionTimestamp == nil && !podReady(p) {
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

// view is the Deployment's share of the input: its ReplicaSets, the new one, and its present
// pods split between the new template and older ones, each sorted so that "the first" is
// always the same object.
type view struct {
	d       *appsv1.Deployment
	owned   []*appsv1.ReplicaSet
	newRS   *appsv1.ReplicaSet
	newPods []*corev1.Pod
	oldPods []*corev1.Pod
}

func newView(in Input) *view {
	d := in.Deployment
	v := &view{d: d}
	for _, rs := range in.ReplicaSets {
		if rs == nil || !sameNamespace(rs.Namespace, d.Namespace) {
			continue
		}
		if ref := metav1.GetControllerOfNoCopy(rs); ref != nil && ref.Kind == "Deployment" && sameObject(ref.UID, ref.Name, d.UID, d.Name) {
			v.owned = append(v.owned, rs)
		}
	}
	slices.SortFunc(v.owned, func(a, b *appsv1.ReplicaSet) int {
		return cmp.Or(cmp.Compare(revision(a), revision(b)), a.CreationTimestamp.Compare(b.CreationTimestamp.Time), cmp.Compare(a.Name, b.Name))
	})
	v.newRS = findNewRS(&d.Spec.Template, v.owned)

	// Pods whose ReplicaSet is gone (deleted with its history) but which match the selector
	// still run the old template and may hold the node's volume: they count as old pods, as
	// the ReplicaSet controller would adopt them. An empty selector would match every pod of
	// the namespace, so it adopts none.
	var sel labels.Selector
	if d.Spec.Selector != nil && (len(d.Spec.Selector.MatchLabels) > 0 || len(d.Spec.Selector.MatchExpressions) > 0) {
		if s, err := metav1.LabelSelectorAsSelector(d.Spec.Selector); err == nil {
			sel = s
		}
	}
	for _, p := range in.Pods {
		if p == nil || !present(p) || !sameNamespace(p.Namespace, d.Namespace) {
			continue
		}
		ref := metav1.GetControllerOfNoCopy(p)
		rs := v.ownerOf(ref)
		switch {
		case rs != nil && rs == v.newRS:
			v.newPods = append(v.newPods, p)
		case rs != nil:
			v.oldPods = append(v.oldPods, p)
		case sel != nil && !knownOwner(ref, in.ReplicaSets) && sel.Matches(labels.Set(p.Labels)):
			v.oldPods = append(v.oldPods, p)
		}
	}
	byAge := func(a, b *corev1.Pod) int {
		return cmp.Or(a.CreationTimestamp.Compare(b.CreationTimestamp.Time), cmp.Compare(a.Name, b.Name))
	}
	slices.SortFunc(v.newPods, byAge)
	slices.SortFunc(v.oldPods, byAge)
	return v
}

// ownerOf is the owned ReplicaSet a pod's controller reference points to, or nil.
func (v *view) ownerOf(ref *metav1.OwnerReference) *appsv1.ReplicaSet {
	if ref == nil || ref.Kind != "ReplicaSet" {
		return nil
	}
	for _, rs := range v.owned {
		if sameObject(ref.UID, ref.Name, rs.UID, rs.Name) {
			return rs
		}
	}
	return nil
}

// knownOwner reports whether a pod's controller is among the ReplicaSets passed in (owned by
// this Deployment or another one); a pod without a controller, or whose ReplicaSet is gone,
// has no known owner.
func knownOwner(ref *metav1.OwnerReference, all []*appsv1.ReplicaSet) bool {
	if ref == nil {
		return false
	}
	if ref.Kind != "ReplicaSet" {
		return true // a StatefulSet's, a Job's, …: never this Deployment's
	}
	for _, rs := range all {
		if rs != nil && sameObject(ref.UID, ref.Name, rs.UID, rs.Name) {
			return true
		}
	}
	return false
}

// findNewRS is the ReplicaSet running the Deployment's template, as the deployment controller
// finds it: equal templates once the pod-template-hash label is ignored; the highest revision
// wins should several match. owned is sorted by ascending revision.
func findNewRS(tmpl *corev1.PodTemplateSpec, owned []*appsv1.ReplicaSet) *appsv1.ReplicaSet {
	want := tmpl.DeepCopy()
	delete(want.Labels, hashLabel)
	for i := len(owned) - 1; i >= 0; i-- {
		got := owned[i].Spec.Template.DeepCopy()
		delete(got.Labels, hashLabel)
		// Semantic equality treats nil and empty maps alike, so a template whose only label
		// was the hash still matches.
		if equality.Semantic.DeepEqual(want, got) {
			return owned[i]
		}
	}
	return nil
}

// counts fills the pod counts of a Result.
func (v *view) counts() Result {
	r := Result{Desired: replicas(v.d.Spec.Replicas), OldPods: int32(len(v.oldPods))}
	for _, p := range v.newPods {
		if p.DeletionTimestamp != nil {
			continue
		}
		r.Updated++
		if podReady(p) {
			r.Ready++
		}
	}
	return r
}

// missing says what still keeps the rollout from being ready; none when it is.
func (v *view) missing(desired int32, r Result) []string {
	if v.newRS == nil {
		m := []string{"new replica set not created yet"}
		if r.OldPods > 0 {
			m = append(m, fmt.Sprintf("%d old %s still present", r.OldPods, plural(r.OldPods, "pod", "pods")))
		}
		return m
	}
	var m []string
	if r.Ready < desired {
		m = append(m, fmt.Sprintf("%d of %d new pods not ready", desired-r.Ready, desired))
	}
	if extra := int32(len(v.newPods)) - r.Updated; extra > 0 {
		m = append(m, fmt.Sprintf("%d new %s terminating", extra, plural(extra, "pod", "pods")))
	} else if r.Updated > desired {
		m = append(m, fmt.Sprintf("%d new pods present, %d desired", r.Updated, desired))
	}
	if r.OldPods > 0 {
		m = append(m, fmt.Sprintf("%d old %s still present", r.OldPods, plural(r.OldPods, "pod", "pods")))
	}
	if len(m) > 0 {
		return m
	}
	// The pods are right; the controllers' counts must agree before the rollout is done, so
	// that a later read of the status (by kubectl, or by slipway status) shows it done too.
	rs, ds := v.newRS, v.d.Status
	if rs.Status.ObservedGeneration < rs.Generation || replicas(rs.Spec.Replicas) != desired ||
		rs.Status.ReadyReplicas != desired || rs.Status.AvailableReplicas != desired ||
		ds.UpdatedReplicas != desired || ds.Replicas != desired || ds.AvailableReplicas < desired {
		m = append(m, fmt.Sprintf("status not yet current (replica set %s: %d ready, %d available; deployment: %d updated, %d available, %d total, of %d)",
			rs.Name, rs.Status.ReadyReplicas, rs.Status.AvailableReplicas, ds.UpdatedReplicas, ds.AvailableReplicas, ds.Replicas, desired))
	}
	return m
}

func replicas(n *int32) int32 {
	if n == nil {
		return 1 // the API server's default for Deployments and ReplicaSets
	}
	return *n
}

func revision(rs *appsv1.ReplicaSet) int64 {
	n, err := strconv.ParseInt(rs.Annotations[revisionAnnotation], 10, 64)
	if err != nil {
		return 0
	}
	return n
}

// sameObject matches a reference to an object: by UID when both sides have one (a name may
// be reused by a later object), else by name.
func sameObject(refUID types.UID, refName string, uid types.UID, name string) bool {
	if refUID != "" && uid != "" {
		return refUID == uid
	}
	return refName == name
}

func sameNamespace(a, b string) bool { return a == "" || b == "" || a == b }

func present(p *corev1.Pod) bool {
	return p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed
}

func podReady(p *corev1.Pod) bool {
	c := podCondition(p, corev1.PodReady)
	return c != nil && c.Status == corev1.ConditionTrue
}

func podCondition(p *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == t {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

func deploymentCondition(d *appsv1.Deployment, t appsv1.DeploymentConditionType) *appsv1.DeploymentCondition {
	for i := range d.Status.Conditions {
		if d.Status.Conditions[i].Type == t {
			return &d.Status.Conditions[i]
		}
	}
	return nil
}

func rsCondition(rs *appsv1.ReplicaSet, t appsv1.ReplicaSetConditionType) *appsv1.ReplicaSetCondition {
	for i := range rs.Status.Conditions {
		if rs.Status.Conditions[i].Type == t {
			return &rs.Status.Conditions[i]
		}
	}
	return nil
}

func plural(n int32, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// oneLine keeps a message from the cluster on one line of a report.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
