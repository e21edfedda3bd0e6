package status_test

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"slipway.dev/slipway/internal/status"
)

// rolloutCase is one row of TestRollout: done()'s world, changed by setup, and what Rollout
// says of it. The rows are grouped by outcome, in this file and status_failures_test.go.
type rolloutCase struct {
	name  string
	setup func(w *world)
	want  status.Result
}

func TestRollout(t *testing.T) {
	var tests []rolloutCase
	for _, rows := range [][]rolloutCase{rolloutReady, rolloutProgressing, rolloutPulls, rolloutFailures, rolloutLate, rolloutNoReplicas} {
		tests = append(tests, rows...)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := done()
			if tt.setup != nil {
				tt.setup(w)
			}
			got := status.Rollout(w.input())
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Rollout (-want +got):\n%s", diff)
			}
		})
	}
}

// rolloutReady are TestRollout's rows of a finished rollout (Ready).
var rolloutReady = []rolloutCase{
	{
		name: "ready",
		want: status.Result{Phase: status.Ready, Message: "1 of 1 pods ready", Ready: 1, Desired: 1, Updated: 1},
	},
	{
		name: "nil replicas means 1",
		setup: func(w *world) {
			w.d.Spec.Replicas = nil
		},
		want: status.Result{Phase: status.Ready, Message: "1 of 1 pods ready", Ready: 1, Desired: 1, Updated: 1},
	},
	{
		name: "three replicas ready",
		setup: func(w *world) {
			w.d.Spec.Replicas = ptr(int32(3))
			w.d.Status.Replicas, w.d.Status.UpdatedReplicas, w.d.Status.ReadyReplicas, w.d.Status.AvailableReplicas = 3, 3, 3, 3
			w.newRS.Spec.Replicas = ptr(int32(3))
			w.newRS.Status.Replicas, w.newRS.Status.ReadyReplicas, w.newRS.Status.AvailableReplicas = 3, 3, 3
			w.pods = append(w.pods, readyPod(w.newRS, "web-new-3"), readyPod(w.newRS, "web-new-2"))
		},
		want: status.Result{Phase: status.Ready, Message: "3 of 3 pods ready", Ready: 3, Desired: 3, Updated: 3},
	},
	{
		name: "an evicted old pod does not count",
		setup: func(w *world) {
			p := readyPod(w.oldRS, "web-old-1")
			p.Status.Phase, p.Status.Reason = corev1.PodFailed, "Evicted"
			w.pods = append(w.pods, p)
		},
		want: status.Result{Phase: status.Ready, Message: "1 of 1 pods ready", Ready: 1, Desired: 1, Updated: 1},
	},
	{
		name: "pods and replica sets of another deployment are ignored",
		setup: func(w *world) {
			other := deployment("db", "db-uid", imageNew, 1)
			rs := replicaSet(other, "db-new", "new", "2", imageNew, 1)
			p := readyPod(rs, "db-new-1")
			waiting(p, "CrashLoopBackOff", "back-off")
			w.oldRS = rs // passed in as if listed from the namespace
			w.pods = append(w.pods, p)
		},
		want: status.Result{Phase: status.Ready, Message: "1 of 1 pods ready", Ready: 1, Desired: 1, Updated: 1},
	},
	{
		name: "rolled back: the reused replica set with the highest revision is the new one",
		setup: func(w *world) {
			// The Deployment went back to imageOld: the controller reuses web-old and gives
			// it revision 3; web-new keeps revision 2.
			w.d.Spec.Template = template("web", imageOld)
			w.d.Annotations["deployment.kubernetes.io/revision"] = "3"
			w.oldRS.Annotations["deployment.kubernetes.io/revision"] = "3"
			w.oldRS.Spec.Replicas = ptr(int32(1))
			w.oldRS.Status.Replicas, w.oldRS.Status.ReadyReplicas, w.oldRS.Status.AvailableReplicas = 1, 1, 1
			w.newRS.Spec.Replicas = ptr(int32(0))
			w.pods = []*corev1.Pod{readyPod(w.oldRS, "web-old-1")}
		},
		want: status.Result{Phase: status.Ready, Message: "1 of 1 pods ready", Ready: 1, Desired: 1, Updated: 1},
	},
}

// rolloutProgressing are TestRollout's rows of a rollout under way (Progressing).
var rolloutProgressing = []rolloutCase{
	{
		name: "generation not observed",
		setup: func(w *world) {
			w.d.Generation = 3
		},
		want: status.Result{Phase: status.Progressing, Message: "deployment web: generation 3 not yet observed by the controller (observed 2)", Desired: 1},
	},
	{
		name: "new replica set not created yet",
		setup: func(w *world) {
			w.newRS = nil
			w.pods = []*corev1.Pod{readyPod(w.oldRS, "web-old-1")}
		},
		want: status.Result{Phase: status.Progressing, Message: "new replica set not created yet; 1 old pod still present", Desired: 1, OldPods: 1},
	},
	{
		name: "old pod still terminating, new pod not created (Recreate)",
		setup: func(w *world) {
			w.notReady()
			old := readyPod(w.oldRS, "web-old-1")
			old.DeletionTimestamp = ptr(at(time.Second))
			w.pods = []*corev1.Pod{old}
		},
		want: status.Result{Phase: status.Progressing, Message: "1 of 1 new pods not ready; 1 old pod still present", Desired: 1, OldPods: 1},
	},
	{
		name: "old pod still terminating next to a ready new pod",
		setup: func(w *world) {
			old := readyPod(w.oldRS, "web-old-1")
			old.DeletionTimestamp = ptr(at(time.Second))
			w.pods = append(w.pods, old)
		},
		want: status.Result{Phase: status.Progressing, Message: "1 old pod still present", Ready: 1, Desired: 1, Updated: 1, OldPods: 1},
	},
	{
		name: "an orphaned old pod matching the selector still counts",
		setup: func(w *world) {
			old := readyPod(w.oldRS, "web-old-1")
			old.OwnerReferences[0].UID = "deleted-rs-uid"
			old.OwnerReferences[0].Name = "web-older"
			w.pods = append(w.pods, old)
		},
		want: status.Result{Phase: status.Progressing, Message: "1 old pod still present", Ready: 1, Desired: 1, Updated: 1, OldPods: 1},
	},
	{
		name: "new pod pending in ContainerCreating",
		setup: func(w *world) {
			w.notReady()
			waiting(w.pod(), "ContainerCreating", "")
		},
		want: status.Result{Phase: status.Progressing, Message: "1 of 1 new pods not ready", Desired: 1, Updated: 1},
	},
	{
		name: "new pod running, readiness probe failing",
		setup: func(w *world) {
			w.notReady()
			unready(w.pod())
		},
		want: status.Result{
			Phase: status.Progressing, Reason: "NotReady", Pod: "web-new-1",
			Message: "pod web-new-1: container node: not ready yet: containers with unready status: [node]",
			Desired: 1, Updated: 1,
		},
	},
	{
		name: "pods ready, controller status lagging",
		setup: func(w *world) {
			w.notReady()
		},
		want: status.Result{
			Phase:   status.Progressing,
			Message: "status not yet current (replica set web-new: 0 ready, 0 available; deployment: 1 updated, 0 available, 1 total, of 1)",
			Ready:   1, Desired: 1, Updated: 1,
		},
	},
	{
		name: "a terminating new pod that exited is not a failure",
		setup: func(w *world) {
			p := readyPod(w.newRS, "web-new-0")
			p.DeletionTimestamp = ptr(at(3 * time.Second))
			unready(p)
			p.Status.ContainerStatuses[0].State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 143}}
			w.pods = append(w.pods, p)
		},
		want: status.Result{Phase: status.Progressing, Message: "1 new pod terminating", Ready: 1, Desired: 1, Updated: 1},
	},
}

// rolloutNoReplicas are TestRollout's rows of a Deployment of no replicas.
var rolloutNoReplicas = []rolloutCase{
	{
		name: "desired 0 and no pod left",
		setup: func(w *world) {
			w.d.Spec.Replicas = ptr(int32(0))
			w.newRS.Spec.Replicas = ptr(int32(0))
			w.pods = nil
		},
		want: status.Result{Phase: status.Ready, Message: "no pods remain"},
	},
	{
		name: "desired 0 with a crash-looping pod terminating",
		setup: func(w *world) {
			w.d.Spec.Replicas = ptr(int32(0))
			w.newRS.Spec.Replicas = ptr(int32(0))
			p := w.pod()
			waiting(p, "CrashLoopBackOff", "back-off")
			p.DeletionTimestamp = ptr(at(3 * time.Second))
		},
		want: status.Result{Phase: status.Progressing, Message: "1 pod still present (web-new-1)"},
	},
}

func TestRolloutEdgeInputs(t *testing.T) {
	tests := []struct {
		name string
		in   status.Input
		want status.Result
	}{
		{
			name: "nil deployment",
			in:   status.Input{Now: t0.Add(time.Second), Since: t0, Limit: limit},
			want: status.Result{Phase: status.Progressing, Message: "deployment not found"},
		},
		{
			name: "nil deployment past the limit",
			in:   status.Input{Now: t0.Add(limit), Since: t0, Limit: limit},
			want: status.Result{Phase: status.Failed, Reason: "Timeout", Message: "not done within 20s: deployment not found"},
		},
		{
			name: "no limit never times out",
			in:   status.Input{Deployment: &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web"}}, Now: t0.Add(time.Hour)},
			want: status.Result{Phase: status.Progressing, Message: "new replica set not created yet", Desired: 1},
		},
		{
			name: "nil objects in the lists are skipped",
			in: status.Input{
				Deployment:  &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web"}},
				ReplicaSets: []*appsv1.ReplicaSet{nil},
				Pods:        []*corev1.Pod{nil},
				Events:      []*corev1.Event{nil},
				Now:         t0,
			},
			want: status.Result{Phase: status.Progressing, Message: "new replica set not created yet", Desired: 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := status.Rollout(tt.in)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Rollout (-want +got):\n%s", diff)
			}
		})
	}
}

// apply's wait reads a rollout's status on every change of a node's objects: 1,000 nodes
// rolling out read it tens of thousands of times. Finding the new ReplicaSet must not copy
// every pod template it compares (issue 17: a tenth of a 1,000-node first apply's allocation).
func TestRolloutAllocatesLittle(t *testing.T) {
	w := done()
	// Templates of a real node's size: env, volumes, probes; here 40 variables.
	for _, tmpl := range []*corev1.PodTemplateSpec{&w.d.Spec.Template, &w.oldRS.Spec.Template, &w.newRS.Spec.Template} {
		c := &tmpl.Spec.Containers[0]
		for i := range 40 {
			c.Env = append(c.Env, corev1.EnvVar{Name: fmt.Sprintf("VARIABLE_%d", i), Value: "a value of some length"})
		}
	}
	in := w.input()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	const runs = 100
	for range runs {
		status.Rollout(in)
	}
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	if per, limit := (after.TotalAlloc-before.TotalAlloc)/runs, uint64(19<<10); per > limit {
		t.Errorf("Rollout of a finished rollout with 2 ReplicaSets allocates %d bytes, want at most %d", per, limit)
	}
}
