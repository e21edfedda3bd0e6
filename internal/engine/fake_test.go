package engine

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"

	"slipway.dev/slipway/internal/kube"
	"slipway.dev/slipway/internal/plan"
)

// fakeCluster plays the API server and a deployment controller in memory: a Deployment's
// pods become ready, hang not ready, or crash loop, by the image they run (images containing
// "hang" or "crash"). Every call is logged; onCall may cancel a run between steps.
type fakeCluster struct {
	mu           sync.Mutex
	objects      map[plan.Key]*unstructured.Unstructured
	deps         map[string]*fakeDeployment
	kube.Wakeups // a Deployment's, at each change of it
	calls        []string
	uid          int
	// released: pods of "slow" images are ready; until then they are not.
	released bool
	onCall   func(call string) // called after each change, outside the lock
	// serves holds the kinds of CRDs the cluster has (ServesKind).
	serves map[schema.GroupVersionKind]bool
	pub    fakePublish    // the Gateway, its controller and the load balancer (fakepublish_test.go)
	jobs   []*batchv1.Job // the Jobs run, in order
	jobErr error          // what RunJob returns
	// liveJobs are Jobs in the cluster by namespace/name, as Job reads them (someone else's
	// removal Job, say).
	liveJobs map[string]*batchv1.Job
	// bindNow: claims bind as they are made (an Immediate StorageClass); bound holds the
	// phase each claim reached (a claim not there is Pending) and Bind changes it.
	bindNow bool
	bound   map[string]corev1.PersistentVolumeClaimPhase
	podLog  string // what PodLogTail returns; "" is "fake: exit 1"
}

func (f *fakeCluster) ClaimsBindImmediately(context.Context, string) (bool, error) {
	return f.bindNow, nil
}

func (f *fakeCluster) ClaimPhase(_, name string) corev1.PersistentVolumeClaimPhase {
	f.mu.Lock()
	defer f.mu.Unlock()
	if p, ok := f.bound[name]; ok {
		return p
	}
	return corev1.ClaimPending
}

// bind binds claim name, as the volume controller does, and wakes who waits on it.
func (f *fakeCluster) bind(name string) {
	f.mu.Lock()
	if f.bound == nil {
		f.bound = map[string]corev1.PersistentVolumeClaimPhase{}
	}
	f.bound[name] = corev1.ClaimBound
	f.mu.Unlock()
	f.Notify(kube.ClaimWakeup(name))
}

type fakeDeployment struct {
	dep  *appsv1.Deployment
	rss  []*appsv1.ReplicaSet
	pods []*corev1.Pod
}

func newFakeCluster() *fakeCluster {
	return &fakeCluster{objects: map[plan.Key]*unstructured.Unstructured{}, deps: map[string]*fakeDeployment{}}
}

var _ Cluster = (*fakeCluster)(nil)

func (f *fakeCluster) log(call string) {
	f.mu.Lock()
	f.calls = append(f.calls, call)
	hook := f.onCall
	f.mu.Unlock()
	if hook != nil {
		hook(call)
	}
}

// Calls returns the calls so far.
func (f *fakeCluster) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

func (f *fakeCluster) Apply(_ context.Context, obj runtime.Object, opts kube.ApplyOptions) (*unstructured.Unstructured, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: m}
	if plan.IsStub(u) {
		// as kube.Client.Apply: a test that gets here has let a stub reach the cluster
		return nil, fmt.Errorf("%s %s: a stub of the plan, not the object: not applied", u.GetKind(), u.GetName())
	}
	if u.GetKind() == "" {
		u.SetAPIVersion("apps/v1")
		u.SetKind("Deployment")
	}
	if opts.DryRun {
		return u, nil
	}
	k := plan.Key{Kind: u.GetKind(), Namespace: u.GetNamespace(), Name: u.GetName()}
	f.mu.Lock()
	if u.GetKind() == "Deployment" {
		var d appsv1.Deployment
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &d); err != nil {
			f.mu.Unlock()
			return nil, err
		}
		f.applyDeployment(&d)
		u.SetGeneration(f.deps[d.Name].dep.Generation)
	}
	f.objects[k] = u
	f.mu.Unlock()
	f.log(fmt.Sprintf("apply %s %s", k.Kind, k.Name))
	return u, nil
}

// applyDeployment sets the spec of Deployment d and runs the controller.
func (f *fakeCluster) applyDeployment(d *appsv1.Deployment) {
	fd := f.deps[d.Name]
	if fd == nil {
		f.uid++
		fd = &fakeDeployment{dep: &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: d.Name, Namespace: d.Namespace, UID: types.UID(fmt.Sprint("dep-", f.uid))}}}
		f.deps[d.Name] = fd
	}
	fd.dep.Labels = d.Labels
	fd.dep.Spec = *d.Spec.DeepCopy()
	fd.dep.Generation++
	f.reconcile(fd)
}

// reconcile does what the deployment controller and kubelet would: the ReplicaSet of the
// template runs the replicas, every other is at 0.
func (f *fakeCluster) reconcile(fd *fakeDeployment) {
	d := fd.dep
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	var cur *appsv1.ReplicaSet
	maxRev := 0
	for _, rs := range fd.rss {
		var rev int
		fmt.Sscan(rs.Annotations["deployment.kubernetes.io/revision"], &rev)
		maxRev = max(maxRev, rev)
		t := rs.Spec.Template.DeepCopy()
		delete(t.Labels, appsv1.DefaultDeploymentUniqueLabelKey)
		if equality.Semantic.DeepEqual(t, &d.Spec.Template) {
			cur = rs
		}
	}
	rev := func(rs *appsv1.ReplicaSet) string { return rs.Annotations["deployment.kubernetes.io/revision"] }
	if cur == nil {
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
		fd.rss = append(fd.rss, cur)
	}
	if rev(cur) != fmt.Sprint(maxRev) || maxRev == 0 {
		cur.Annotations["deployment.kubernetes.io/revision"] = fmt.Sprint(maxRev + 1)
	}
	d.Annotations = map[string]string{"deployment.kubernetes.io/revision": rev(cur)}
	fd.pods = nil
	var ready int32
	for i := range want {
		p := fakePod(cur, i, f.released)
		if podReadyFake(p) {
			ready++
		}
		fd.pods = append(fd.pods, p)
	}
	for _, rs := range fd.rss {
		rs.Generation++
		rs.Status = appsv1.ReplicaSetStatus{ObservedGeneration: rs.Generation}
		rs.Spec.Replicas = ptr.To[int32](0)
	}
	cur.Spec.Replicas = ptr.To(want)
	cur.Status = appsv1.ReplicaSetStatus{ObservedGeneration: cur.Generation, Replicas: want, ReadyReplicas: ready, AvailableReplicas: ready}
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: want, UpdatedReplicas: want, ReadyReplicas: ready, AvailableReplicas: ready}
	f.Notify(d.Name)
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

// release makes the pods of "slow" images ready.
func (f *fakeCluster) release() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.released = true
	for _, fd := range f.deps {
		f.reconcile(fd)
	}
}

func podReadyFake(p *corev1.Pod) bool { return p.Status.Conditions[0].Status == corev1.ConditionTrue }

func (f *fakeCluster) Delete(_ context.Context, k plan.Key, _ string) error {
	f.mu.Lock()
	delete(f.objects, k)
	if k.Kind == "Deployment" {
		delete(f.deps, k.Name)
	}
	f.mu.Unlock()
	f.log(fmt.Sprintf("delete %s %s", k.Kind, k.Name))
	return nil
}

func (f *fakeCluster) WaitGone(context.Context, plan.Key, time.Duration) error { return nil }

func (f *fakeCluster) Scale(_ context.Context, ns, name string, replicas int32) (int64, error) {
	f.mu.Lock()
	fd := f.deps[name]
	if fd == nil {
		f.mu.Unlock()
		return 0, fmt.Errorf("deployment %s/%s: not found", ns, name)
	}
	fd.dep.Spec.Replicas = ptr.To(replicas)
	fd.dep.Generation++
	f.reconcile(fd)
	gen := fd.dep.Generation
	f.mu.Unlock()
	f.log(fmt.Sprintf("scale %s %d", name, replicas))
	return gen, nil
}

// replicas returns Deployment name's replicas, -1 when it does not exist.
func (f *fakeCluster) replicas(name string) int32 {
	f.mu.Lock()
	defer f.mu.Unlock()
	if fd := f.deps[name]; fd != nil {
		return *fd.dep.Spec.Replicas
	}
	return -1
}

// image returns the image Deployment name's template runs.
func (f *fakeCluster) image(name string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if fd := f.deps[name]; fd != nil {
		return firstImage(fd.dep.Spec.Template.Spec.Containers)
	}
	return ""
}

func (f *fakeCluster) Watch(context.Context, string) (deploymentWatch, error) { return f, nil }

func (f *fakeCluster) Deployment(_, name string) (*appsv1.Deployment, []*appsv1.ReplicaSet, []*corev1.Pod, []*corev1.Event) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fd := f.deps[name]
	if fd == nil {
		return nil, nil, nil, nil
	}
	var rss []*appsv1.ReplicaSet
	for _, rs := range fd.rss {
		rss = append(rss, rs.DeepCopy())
	}
	var pods []*corev1.Pod
	var evs []*corev1.Event
	for _, p := range fd.pods {
		pods = append(pods, p.DeepCopy())
		// The kubelet's event about each pod: a failure report waits for one.
		evs = append(evs, &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: p.Name + ".started", Namespace: p.Namespace},
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: p.Name, Namespace: p.Namespace, UID: p.UID},
			Reason:         "Started", Message: "Started container node", Type: corev1.EventTypeNormal})
	}
	return fd.dep.DeepCopy(), rss, pods, evs
}

func (f *fakeCluster) Stop() {}

func (f *fakeCluster) PodLogTail(context.Context, string, string, string, int64) string {
	if f.podLog != "" {
		return f.podLog
	}
	return "fake: exit 1"
}

func (f *fakeCluster) Ping(context.Context) (string, error)                     { return "v1.34.0", nil }
func (f *fakeCluster) RuntimeClassExists(context.Context, string) (bool, error) { return true, nil }
func (f *fakeCluster) StopSignalSupported(context.Context, string) (bool, error) {
	return true, nil
}

func (f *fakeCluster) ServesKind(_ context.Context, gvk schema.GroupVersionKind) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.serves[gvk], nil
}

func (f *fakeCluster) Namespace(_ context.Context, ns string) (*unstructured.Unstructured, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.objects[plan.Key{Kind: "Namespace", Name: ns}], nil
}

func (f *fakeCluster) ListManaged(_ context.Context, ns, _ string) (map[plan.Key]*unstructured.Unstructured, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[plan.Key]*unstructured.Unstructured{}
	for k, u := range f.objects {
		if k.Namespace == ns {
			out[k] = u.DeepCopy()
		}
	}
	return out, nil
}

// ListManagedObjects is ListManaged with the built-in kinds typed, as kube's client gives
// them: the engine's tests run the plan's typed comparison.
func (f *fakeCluster) ListManagedObjects(ctx context.Context, ns, sel string) (map[plan.Key]plan.Object, error) {
	live, err := f.ListManaged(ctx, ns, sel)
	if err != nil {
		return nil, err
	}
	out := make(map[plan.Key]plan.Object, len(live))
	for k, u := range live {
		out[k] = typedOrNot(u)
	}
	return out, nil
}

// typedOrNot is u in the client-go scheme's type of its kind, u itself for a kind it lacks.
func typedOrNot(u *unstructured.Unstructured) plan.Object {
	obj, err := scheme.Scheme.New(u.GroupVersionKind())
	if err != nil {
		return u
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, obj); err != nil {
		return u
	}
	o, ok := obj.(plan.Object)
	if !ok {
		return u
	}
	return o
}

// ServiceIngress is the load balancer's address of the Service (fakePublish.addresses).
func (f *fakeCluster) ServiceIngress(_ context.Context, _, name string) ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if a := f.pub.addresses[name]; a != "" {
		return []string{a}, nil
	}
	return nil, nil
}

func (f *fakeCluster) ListWorkloads(context.Context, string, string) (*kube.Workloads, error) {
	return nil, fmt.Errorf("fake cluster: ListWorkloads not played")
}

func (f *fakeCluster) DeleteNamespaceAndWait(context.Context, string, string) error {
	return fmt.Errorf("fake cluster: DeleteNamespaceAndWait not played")
}

func applyOptions() kube.ApplyOptions { return kube.ApplyOptions{Force: true} }

// Job reads a Job of liveJobs.
func (f *fakeCluster) Job(_ context.Context, ns, name string) (*batchv1.Job, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if j := f.liveJobs[ns+"/"+name]; j != nil {
		return j.DeepCopy(), nil
	}
	return nil, nil
}

// RunJob plays a Job that runs to its end: it records the Job and fails with jobErr.
func (f *fakeCluster) RunJob(_ context.Context, job *batchv1.Job, _ time.Duration) error {
	f.mu.Lock()
	f.jobs = append(f.jobs, job.DeepCopy())
	err := f.jobErr
	f.mu.Unlock()
	f.log(fmt.Sprintf("run Job %s", job.Name))
	return err
}
