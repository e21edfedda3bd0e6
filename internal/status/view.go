package status

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"slipway.dev/slipway/internal/quote"
)

// view is the Deployment's share of the input: its ReplicaSets, the new one, and its present
// pods split between the new template and older ones, each sorted so that "the first" is
// always the same object.
type view struct {
	d       *appsv1.Deployment
	owned   []*appsv1.ReplicaSet
	newRS   *appsv1.ReplicaSet
	newPods []*corev1.Pod
	oldPods []*corev1.Pod
	// optional are Input.Optional: containers that never keep a pod from counting ready.
	optional []string
}

func newView(in Input) *view {
	d := in.Deployment
	v := &view{d: d, optional: in.Optional}
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
	want := withoutHash(tmpl)
	for i := len(owned) - 1; i >= 0; i-- {
		got := withoutHash(&owned[i].Spec.Template)
		// Semantic equality treats nil and empty maps alike, so a template whose only label
		// was the hash still matches.
		if equality.Semantic.DeepEqual(&want, &got) {
			return owned[i]
		}
	}
	return nil
}

// withoutHash is a shallow copy of t without the pod-template-hash label: the comparison only
// reads, and a deep copy of every template compared was a fifth of what a 1,000-node first
// apply allocated (issue 17).
func withoutHash(t *corev1.PodTemplateSpec) corev1.PodTemplateSpec {
	c := *t
	if _, ok := t.Labels[hashLabel]; ok {
		c.Labels = maps.Clone(t.Labels)
		delete(c.Labels, hashLabel)
	}
	return c
}

// counts fills the pod counts of a Result.
func (v *view) counts() Result {
	r := Result{Desired: replicas(v.d.Spec.Replicas), OldPods: int32(len(v.oldPods))}
	for _, p := range v.newPods {
		if p.DeletionTimestamp != nil {
			continue
		}
		r.Updated++
		if readyBut(p, v.optional) {
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
	// The controllers count the pods Kubernetes calls ready; with optional containers down
	// that is fewer than the pods ready here, and they never catch up.
	ready := desired
	if len(v.optional) > 0 {
		ready = v.readyByCondition()
	}
	if rs.Status.ObservedGeneration < rs.Generation || replicas(rs.Spec.Replicas) != desired ||
		rs.Status.ReadyReplicas != ready || rs.Status.AvailableReplicas != ready ||
		ds.UpdatedReplicas != desired || ds.Replicas != desired || ds.AvailableReplicas < ready {
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

// readyByCondition is the number of new pods, not terminating, that Kubernetes calls ready.
func (v *view) readyByCondition() int32 {
	var n int32
	for _, p := range v.newPods {
		if p.DeletionTimestamp == nil && podReady(p) {
			n++
		}
	}
	return n
}

// optionalStalled reports whether the controller's failure reason comes only from optional
// containers: the progress deadline passed while every pod is ready but for them.
func (v *view) optionalStalled(reason string, desired int32, r Result) bool {
	return len(v.optional) > 0 && reason == ReasonProgressDeadlineExceeded && len(v.missing(desired, r)) == 0
}

// readyBut reports whether p is ready, or would be but for its optional containers: it runs,
// and every other container and every native sidecar (an init container that keeps running)
// is ready.
func readyBut(p *corev1.Pod, optional []string) bool {
	if podReady(p) {
		return true
	}
	if len(optional) == 0 || p.Status.Phase != corev1.PodRunning {
		return false
	}
	ready := map[string]bool{}
	for _, cs := range slices.Concat(p.Status.InitContainerStatuses, p.Status.ContainerStatuses) {
		ready[cs.Name] = cs.Ready
	}
	for _, c := range p.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways && !ready[c.Name] {
			return false
		}
	}
	others := 0
	for _, c := range p.Spec.Containers {
		if slices.Contains(optional, c.Name) {
			continue
		}
		if !ready[c.Name] {
			return false
		}
		others++
	}
	return others > 0
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

// oneLine keeps a message from the cluster on one line of a report, its runs of white space
// one space and every other non-printable character quoted (issue 35: a message's escape codes
// must not rewrite what the terminal shows).
func oneLine(s string) string {
	return quote.Line(strings.Join(strings.Fields(s), " "))
}
