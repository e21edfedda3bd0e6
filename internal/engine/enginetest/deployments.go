package enginetest

import (
	"context"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"slipway.dev/slipway/internal/kube"
	"slipway.dev/slipway/internal/render"
)

// Deployment is a Deployment of the Cluster with what its controller made: its ReplicaSets
// and the pods of the current one.
type Deployment struct {
	Dep  *appsv1.Deployment
	RSs  []*appsv1.ReplicaSet
	Pods []*corev1.Pod
}

// PutDeployment sets the spec of Deployment d and runs the controller, without a call logged.
func (f *Cluster) PutDeployment(d *appsv1.Deployment) {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	f.applyDeployment(d)
}

// applyDeployment sets the spec of Deployment d and runs the controller.
func (f *Cluster) applyDeployment(d *appsv1.Deployment) {
	fd := f.Deps[d.Name]
	if fd == nil {
		f.uid++
		fd = &Deployment{Dep: &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: d.Name, Namespace: d.Namespace, UID: types.UID(fmt.Sprint("dep-", f.uid))}}}
		f.Deps[d.Name] = fd
	}
	fd.Dep.Labels = d.Labels
	fd.Dep.Spec = *d.Spec.DeepCopy()
	fd.Dep.Generation++
	f.reconcile(fd)
}

// reconcile does what the deployment controller and kubelet would: the ReplicaSet of the
// template runs the replicas, every other is at 0.
func (f *Cluster) reconcile(fd *Deployment) {
	d := fd.Dep
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	cur, maxRev := f.currentSet(fd)
	rev := func(rs *appsv1.ReplicaSet) string { return rs.Annotations["deployment.kubernetes.io/revision"] }
	if rev(cur) != fmt.Sprint(maxRev) || maxRev == 0 {
		cur.Annotations["deployment.kubernetes.io/revision"] = fmt.Sprint(maxRev + 1)
	}
	d.Annotations = map[string]string{"deployment.kubernetes.io/revision": rev(cur)}
	fd.Pods = nil
	var ready int32
	for i := range want {
		p := fakePod(cur, i, f.Released)
		if p.Status.Conditions[0].Status == corev1.ConditionTrue {
			ready++
		}
		fd.Pods = append(fd.Pods, p)
	}
	for _, rs := range fd.RSs {
		rs.Generation++
		rs.Status = appsv1.ReplicaSetStatus{ObservedGeneration: rs.Generation}
		rs.Spec.Replicas = ptr.To[int32](0)
	}
	cur.Spec.Replicas = ptr.To(want)
	cur.Status = appsv1.ReplicaSetStatus{ObservedGeneration: cur.Generation, Replicas: want, ReadyReplicas: ready, AvailableReplicas: ready}
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: want, UpdatedReplicas: want, ReadyReplicas: ready, AvailableReplicas: ready}
	f.Notify(d.Name)
}

// currentSet is the ReplicaSet of fd's template, made when none has it, and the highest
// revision of fd's sets before.
func (f *Cluster) currentSet(fd *Deployment) (*appsv1.ReplicaSet, int) {
	d := fd.Dep
	var cur *appsv1.ReplicaSet
	maxRev := 0
	for _, rs := range fd.RSs {
		var rev int
		fmt.Sscan(rs.Annotations["deployment.kubernetes.io/revision"], &rev)
		maxRev = max(maxRev, rev)
		t := rs.Spec.Template.DeepCopy()
		delete(t.Labels, appsv1.DefaultDeploymentUniqueLabelKey)
		if equality.Semantic.DeepEqual(t, &d.Spec.Template) {
			cur = rs
		}
	}
	if cur != nil {
		return cur, maxRev
	}
	f.uid++
	hash := fmt.Sprint("h", f.uid)
	t := d.Spec.Template.DeepCopy()
	if t.Labels == nil {
		t.Labels = map[string]string{}
	}
	t.Labels[appsv1.DefaultDeploymentUniqueLabelKey] = hash
	cur = &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: d.Name + "-" + hash, Namespace: d.Namespace, UID: types.UID("rs-" + hash),
		Labels:          map[string]string{appsv1.DefaultDeploymentUniqueLabelKey: hash},
		Annotations:     map[string]string{},
		OwnerReferences: []metav1.OwnerReference{{Kind: "Deployment", Name: d.Name, UID: d.UID, Controller: ptr.To(true)}}},
		Spec: appsv1.ReplicaSetSpec{Template: *t}}
	fd.RSs = append(fd.RSs, cur)
	return cur, maxRev
}

// fakePod is pod i of rs, behaving as its image says.
func fakePod(rs *appsv1.ReplicaSet, i int32, released bool) *corev1.Pod {
	img := ""
	if cs := rs.Spec.Template.Spec.Containers; len(cs) > 0 {
		img = cs[0].Image
	}
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", rs.Name, i), Namespace: rs.Namespace,
		CreationTimestamp: metav1.Now(),
		OwnerReferences:   []metav1.OwnerReference{{Kind: "ReplicaSet", Name: rs.Name, UID: rs.UID, Controller: ptr.To(true)}}},
		Spec:   *rs.Spec.Template.Spec.DeepCopy(),
		Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	cs := corev1.ContainerStatus{Name: "node", Image: img}
	ready := corev1.ConditionFalse
	switch {
	case strings.Contains(img, "crash"):
		cs.RestartCount = 3
		cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off 40s restarting failed container"}
	case strings.Contains(img, "hang"), strings.Contains(img, "slow") && !released:
		cs.State.Running = &corev1.ContainerStateRunning{}
	default:
		cs.State.Running = &corev1.ContainerStateRunning{}
		cs.Ready = true
		ready = corev1.ConditionTrue
	}
	p.Status.ContainerStatuses = []corev1.ContainerStatus{cs}
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: ready}}
	return p
}

// Release makes the pods of "slow" images ready.
func (f *Cluster) Release() {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	f.Released = true
	for _, fd := range f.Deps {
		f.reconcile(fd)
	}
}

func (f *Cluster) Scale(_ context.Context, ns, name string, replicas int32) (int64, error) {
	f.Mu.Lock()
	fd := f.Deps[name]
	if fd == nil {
		f.Mu.Unlock()
		return 0, fmt.Errorf("deployment %s/%s: not found", ns, name)
	}
	fd.Dep.Spec.Replicas = ptr.To(replicas)
	fd.Dep.Generation++
	f.reconcile(fd)
	gen := fd.Dep.Generation
	f.Mu.Unlock()
	f.log(fmt.Sprintf("scale %s %d", name, replicas))
	return gen, nil
}

// Replicas returns Deployment name's replicas, -1 when it does not exist.
func (f *Cluster) Replicas(name string) int32 {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	if fd := f.Deps[name]; fd != nil {
		return *fd.Dep.Spec.Replicas
	}
	return -1
}

// Image returns the image Deployment name's template runs.
func (f *Cluster) Image(name string) string {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	if fd := f.Deps[name]; fd != nil {
		return render.RunningImage(fd.Dep.Spec.Template.Spec.Containers)
	}
	return ""
}

// Watch is the Cluster itself: it is its own cache of Deployments.
func (f *Cluster) Watch(context.Context, string) (kube.DeploymentCache, error) { return f, nil }

func (f *Cluster) Deployment(_, name string) (*appsv1.Deployment, []*appsv1.ReplicaSet, []*corev1.Pod, []*corev1.Event) {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	fd := f.Deps[name]
	if fd == nil {
		return nil, nil, nil, nil
	}
	var rss []*appsv1.ReplicaSet
	for _, rs := range fd.RSs {
		rss = append(rss, rs.DeepCopy())
	}
	var pods []*corev1.Pod
	var evs []*corev1.Event
	for _, p := range fd.Pods {
		pods = append(pods, p.DeepCopy())
		// The kubelet's event about each pod: a failure report waits for one.
		evs = append(evs, &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: p.Name + ".started", Namespace: p.Namespace},
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: p.Name, Namespace: p.Namespace, UID: p.UID},
			Reason:         "Started", Message: "Started container node", Type: corev1.EventTypeNormal})
	}
	return fd.Dep.DeepCopy(), rss, pods, evs
}

func (f *Cluster) Stop() {}

func (f *Cluster) PodLogTail(context.Context, string, string, string, int64) string {
	if f.PodLog != "" {
		return f.PodLog
	}
	return "fake: exit 1"
}

func (f *Cluster) ClaimsBindImmediately(context.Context, string) (bool, error) {
	return f.BindNow, nil
}

func (f *Cluster) ClaimPhase(_, name string) corev1.PersistentVolumeClaimPhase {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	if p, ok := f.Bound[name]; ok {
		return p
	}
	return corev1.ClaimPending
}

// Bind binds claim name, as the volume controller does, and wakes who waits on it.
func (f *Cluster) Bind(name string) {
	f.Mu.Lock()
	if f.Bound == nil {
		f.Bound = map[string]corev1.PersistentVolumeClaimPhase{}
	}
	f.Bound[name] = corev1.ClaimBound
	f.Mu.Unlock()
	f.Notify(kube.ClaimWakeup(name))
}

// Job reads a Job of LiveJobs.
func (f *Cluster) Job(_ context.Context, ns, name string) (*batchv1.Job, error) {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	if j := f.LiveJobs[ns+"/"+name]; j != nil {
		return j.DeepCopy(), nil
	}
	return nil, nil
}

// RunJob plays a Job that runs to its end: it records the Job and fails with JobErr.
func (f *Cluster) RunJob(_ context.Context, job *batchv1.Job, _ time.Duration) error {
	f.Mu.Lock()
	f.Jobs = append(f.Jobs, job.DeepCopy())
	err := f.JobErr
	f.Mu.Unlock()
	f.log(fmt.Sprintf("run Job %s", job.Name))
	return err
}
