package enginetest

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"slipway.dev/slipway/internal/kube"
	"slipway.dev/slipway/internal/plan"
)

// Cluster plays the API server and a deployment controller in memory: a Deployment's pods
// become ready, hang not ready, or crash loop, by the image they run (images containing
// "hang" or "crash"; "slow" ones are not ready until Release). Every call is logged; OnCall
// may cancel a run between steps. It satisfies the engine's Cluster; a test reads and sets
// its fields under Mu.
type Cluster struct {
	Mu           sync.Mutex
	Objects      map[plan.Key]*unstructured.Unstructured
	Deps         map[string]*Deployment
	kube.Wakeups // a Deployment's, at each change of it
	calls        []string
	uid          int
	// Released: pods of "slow" images are ready; until then they are not.
	Released bool
	OnCall   func(call string) // called after each change, outside the lock
	// Serves holds the kinds of CRDs the cluster has (ServesKind).
	Serves map[schema.GroupVersionKind]bool
	Pub    Publish        // the Gateway, its controller and the load balancer (publish.go)
	Jobs   []*batchv1.Job // the Jobs run, in order
	JobErr error          // what RunJob returns
	// LiveJobs are Jobs in the cluster by namespace/name, as Job reads them (someone else's
	// removal Job, say).
	LiveJobs map[string]*batchv1.Job
	// BindNow: claims bind as they are made (an Immediate StorageClass); Bound holds the
	// phase each claim reached (a claim not there is Pending) and Bind changes it.
	BindNow bool
	Bound   map[string]corev1.PersistentVolumeClaimPhase
	PodLog  string // what PodLogTail returns; "" is "fake: exit 1"
}

// NewCluster returns an empty cluster.
func NewCluster() *Cluster {
	return &Cluster{Objects: map[plan.Key]*unstructured.Unstructured{}, Deps: map[string]*Deployment{}}
}

// ApplyOptions are the options a test applies its starting objects with.
func ApplyOptions() kube.ApplyOptions { return kube.ApplyOptions{Force: true} }

func (f *Cluster) log(call string) {
	f.Mu.Lock()
	f.calls = append(f.calls, call)
	hook := f.OnCall
	f.Mu.Unlock()
	if hook != nil {
		hook(call)
	}
}

// Calls returns the calls so far ("apply Deployment web", "scale web 0", …).
func (f *Cluster) Calls() []string {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	return slices.Clone(f.calls)
}

// ResetCalls forgets the calls so far: a test's setup is not what it asserts on.
func (f *Cluster) ResetCalls() {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	f.calls = nil
}

func (f *Cluster) Apply(_ context.Context, obj runtime.Object, opts kube.ApplyOptions) (*unstructured.Unstructured, error) {
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
	f.Mu.Lock()
	if u.GetKind() == "Deployment" {
		var d appsv1.Deployment
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &d); err != nil {
			f.Mu.Unlock()
			return nil, err
		}
		f.applyDeployment(&d)
		u.SetGeneration(f.Deps[d.Name].Dep.Generation)
	}
	f.Objects[k] = u
	f.Mu.Unlock()
	f.log(fmt.Sprintf("apply %s %s", k.Kind, k.Name))
	return u, nil
}

func (f *Cluster) Delete(_ context.Context, k plan.Key, _ string) error {
	f.Mu.Lock()
	delete(f.Objects, k)
	if k.Kind == "Deployment" {
		delete(f.Deps, k.Name)
	}
	f.Mu.Unlock()
	f.log(fmt.Sprintf("delete %s %s", k.Kind, k.Name))
	return nil
}

func (f *Cluster) WaitGone(context.Context, plan.Key, time.Duration) error { return nil }

// Get returns a copy of the object k as the fake holds it; nil when it has none.
func (f *Cluster) Get(_ context.Context, k plan.Key) (*unstructured.Unstructured, error) {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	if u := f.Objects[k]; u != nil {
		return u.DeepCopy(), nil
	}
	return nil, nil
}

func (f *Cluster) Ping(context.Context) (string, error)                     { return "v1.34.0", nil }
func (f *Cluster) RuntimeClassExists(context.Context, string) (bool, error) { return true, nil }
func (f *Cluster) StopSignalSupported(context.Context, string) (bool, error) {
	return true, nil
}

func (f *Cluster) ServesKind(_ context.Context, gvk schema.GroupVersionKind) (bool, error) {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	return f.Serves[gvk], nil
}

func (f *Cluster) Namespace(_ context.Context, ns string) (*unstructured.Unstructured, error) {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	return f.Objects[plan.Key{Kind: "Namespace", Name: ns}], nil
}

func (f *Cluster) ListManaged(_ context.Context, ns, _ string) (map[plan.Key]*unstructured.Unstructured, error) {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	out := map[plan.Key]*unstructured.Unstructured{}
	for k, u := range f.Objects {
		if k.Namespace == ns {
			out[k] = u.DeepCopy()
		}
	}
	return out, nil
}

// ListManagedObjects is ListManaged with the built-in kinds typed, as kube's client gives
// them: the engine's tests run the plan's typed comparison.
func (f *Cluster) ListManagedObjects(ctx context.Context, ns, sel string) (map[plan.Key]plan.Object, error) {
	live, err := f.ListManaged(ctx, ns, sel)
	if err != nil {
		return nil, err
	}
	out := make(map[plan.Key]plan.Object, len(live))
	for k, u := range live {
		out[k] = TypedOrNot(u)
	}
	return out, nil
}

// TypedOrNot is u in the client-go scheme's type of its kind, u itself for a kind it lacks.
func TypedOrNot(u *unstructured.Unstructured) plan.Object { return kube.Typed(u) }

func (f *Cluster) ListWorkloads(context.Context, string, string) (*kube.Workloads, error) {
	return nil, fmt.Errorf("fake cluster: ListWorkloads not played")
}

func (f *Cluster) DeleteNamespaceAndWait(context.Context, string, string) error {
	return fmt.Errorf("fake cluster: DeleteNamespaceAndWait not played")
}

// Relabel is the fake's relabel: the label changes when the object is there and its label
// says from.
func (f *Cluster) Relabel(_ context.Context, k plan.Key, _, label, from, to string) error {
	f.Mu.Lock()
	u := f.Objects[k]
	if u != nil && u.GetLabels()[label] == from {
		l := maps.Clone(u.GetLabels())
		l[label] = to
		u.SetLabels(l)
	}
	f.Mu.Unlock()
	f.log("relabel " + k.Kind + " " + k.Name + " " + to)
	return nil
}

// KillAt freezes the run at its call named call, as a kill there leaves it: the state as
// written before, the cluster as the call left it; the frozen run never goes on (a cancelled
// context is no kill: the engine finishes the step it is in). The returned channel closes
// once the run is frozen; later calls go on.
func (f *Cluster) KillAt(call string) <-chan struct{} {
	frozen := make(chan struct{})
	f.Mu.Lock()
	defer f.Mu.Unlock()
	f.OnCall = func(c string) {
		if c != call {
			return
		}
		f.Mu.Lock()
		f.OnCall = nil
		f.Mu.Unlock()
		close(frozen)
		select {} // the process is gone
	}
	return frozen
}
