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

const pullMsg = `failed to pull and unpack image "` + imageNew + `": not found`

func TestRollout(t *testing.T) {
	tests := []struct {
		name  string
		setup func(w *world)
		want  status.Result
	}{
		// Ready.
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

		// Progressing.
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

		// Image pulls.
		{
			name: "ErrImagePull within the grace",
			setup: func(w *world) {
				w.notReady()
				waiting(w.pod(), "ErrImagePull", pullMsg)
				w.now = 11 * time.Second // 10 s after the pod's creation: not beyond
			},
			want: status.Result{
				Phase: status.Progressing, Reason: "ErrImagePull", Pod: "web-new-1",
				Message: `pod web-new-1: container node: cannot pull image "` + imageNew + `" (ErrImagePull): ` + pullMsg,
				Desired: 1, Updated: 1,
			},
		},
		{
			name: "ErrImagePull beyond the grace",
			setup: func(w *world) {
				w.notReady()
				waiting(w.pod(), "ErrImagePull", pullMsg)
				w.now = 12 * time.Second
			},
			want: status.Result{
				Phase: status.Failed, Reason: "ErrImagePull", Pod: "web-new-1",
				Message: `pod web-new-1: container node: cannot pull image "` + imageNew + `" (ErrImagePull): ` + pullMsg,
				Desired: 1, Updated: 1,
			},
		},
		{
			name: "ImagePullBackOff beyond the grace",
			setup: func(w *world) {
				w.notReady()
				waiting(w.pod(), "ImagePullBackOff", `Back-off pulling image "`+imageNew+`"`)
				w.now = 12 * time.Second
			},
			want: status.Result{
				Phase: status.Failed, Reason: "ImagePullBackOff", Pod: "web-new-1",
				Message: `pod web-new-1: container node: cannot pull image "` + imageNew + `" (ImagePullBackOff): Back-off pulling image "` + imageNew + `"`,
				Desired: 1, Updated: 1,
			},
		},
		{
			name: "ImagePullBackOff measured from the first pull event",
			setup: func(w *world) {
				w.notReady()
				waiting(w.pod(), "ImagePullBackOff", "Back-off pulling image")
				w.events = []*corev1.Event{
					event("e1", "Pod", "web-new-1", "web-new-1-uid", "Pulling", "Pulling image", 2*time.Second, 2*time.Second, 1),
					event("e2", "Pod", "web-new-1", "web-new-1-uid", "Failed", "Failed to pull image: 502 Bad Gateway", 4*time.Second, 9*time.Second, 2),
					event("e3", "Pod", "web-new-1", "web-new-1-uid", "BackOff", "Back-off pulling image", 5*time.Second, 9*time.Second, 2),
				}
				w.now = 14 * time.Second // 13 s after creation, 10 s after the first failure
			},
			want: status.Result{
				Phase: status.Progressing, Reason: "ImagePullBackOff", Pod: "web-new-1",
				Message: `pod web-new-1: container node: cannot pull image "` + imageNew + `" (ImagePullBackOff): Back-off pulling image`,
				Desired: 1, Updated: 1,
			},
		},
		{
			name: "pull error still within the grace at the limit",
			setup: func(w *world) {
				w.notReady()
				w.pod().CreationTimestamp = at(15 * time.Second)
				waiting(w.pod(), "ErrImagePull", pullMsg)
				w.now = limit
			},
			want: status.Result{
				Phase: status.Failed, Reason: "ErrImagePull", Pod: "web-new-1",
				Message: `pod web-new-1: container node: cannot pull image "` + imageNew + `" (ErrImagePull): ` + pullMsg,
				Desired: 1, Updated: 1,
			},
		},

		// Other certain failures.
		{
			name: "CrashLoopBackOff fails at once",
			setup: func(w *world) {
				w.notReady()
				p := w.pod()
				waiting(p, "CrashLoopBackOff", "back-off 10s restarting failed container=node")
				p.Status.Phase = corev1.PodRunning
				p.Status.ContainerStatuses[0].RestartCount = 3
				p.Status.ContainerStatuses[0].LastTerminationState.Terminated = &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error"}
				w.now = 2 * time.Second
			},
			want: status.Result{
				Phase: status.Failed, Reason: "CrashLoopBackOff", Pod: "web-new-1",
				Message: "pod web-new-1: container node: back-off restarting failed container (restarts 3, last exit code 1)",
				Desired: 1, Updated: 1,
			},
		},
		{
			name: "container exited non-zero",
			setup: func(w *world) {
				w.notReady()
				p := w.pod()
				unready(p)
				p.Status.ContainerStatuses[0].State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 2, Reason: "Error"}}
			},
			want: status.Result{
				Phase: status.Failed, Reason: "ContainerExited", Pod: "web-new-1",
				Message: "pod web-new-1: container node: exited with code 2",
				Desired: 1, Updated: 1,
			},
		},
		{
			name: "init container OOMKilled",
			setup: func(w *world) {
				w.notReady()
				p := w.pod()
				waiting(p, "PodInitializing", "")
				p.Status.InitContainerStatuses = []corev1.ContainerStatus{{
					Name:  "setup",
					State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "OOMKilled", Message: "out of\nmemory"}},
				}}
			},
			want: status.Result{
				Phase: status.Failed, Reason: "ContainerExited", Pod: "web-new-1",
				Message: "pod web-new-1: init container setup: exited with code 137 (OOMKilled): out of memory",
				Desired: 1, Updated: 1,
			},
		},
		{
			name: "exit code 0 is not a failure",
			setup: func(w *world) {
				w.notReady()
				p := w.pod()
				unready(p)
				p.Status.ContainerStatuses[0].State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed"}}
			},
			want: status.Result{
				Phase: status.Progressing, Reason: "NotReady", Pod: "web-new-1",
				Message: "pod web-new-1: not ready yet: containers with unready status: [node]",
				Desired: 1, Updated: 1,
			},
		},
		{
			name: "CreateContainerConfigError",
			setup: func(w *world) {
				w.notReady()
				waiting(w.pod(), "CreateContainerConfigError", `secret "web-env" not found`)
			},
			want: status.Result{
				Phase: status.Failed, Reason: "CreateContainerConfigError", Pod: "web-new-1",
				Message: `pod web-new-1: container node: cannot start (CreateContainerConfigError): secret "web-env" not found`,
				Desired: 1, Updated: 1,
			},
		},
		{
			name: "InvalidImageName",
			setup: func(w *world) {
				w.notReady()
				waiting(w.pod(), "InvalidImageName", `Failed to apply default image tag "Web": invalid reference format`)
			},
			want: status.Result{
				Phase: status.Failed, Reason: "InvalidImageName", Pod: "web-new-1",
				Message: `pod web-new-1: container node: cannot start (InvalidImageName): Failed to apply default image tag "Web": invalid reference format`,
				Desired: 1, Updated: 1,
			},
		},
		{
			name: "a crash loop beats another pod's unreadiness",
			setup: func(w *world) {
				w.d.Spec.Replicas = ptr(int32(2))
				w.newRS.Spec.Replicas = ptr(int32(2))
				w.notReady()
				unready(w.pod())
				p := readyPod(w.newRS, "web-new-2")
				waiting(p, "CrashLoopBackOff", "back-off")
				w.pods = append(w.pods, p)
			},
			want: status.Result{
				Phase: status.Failed, Reason: "CrashLoopBackOff", Pod: "web-new-2",
				Message: "pod web-new-2: container node: back-off restarting failed container (restarts 0)",
				Desired: 2, Updated: 2,
			},
		},
		{
			name: "FailedCreate on the new replica set",
			setup: func(w *world) {
				w.notReady()
				w.pods = nil
				w.newRS.Status.Replicas = 0
				w.newRS.Status.Conditions = []appsv1.ReplicaSetCondition{{
					Type: appsv1.ReplicaSetReplicaFailure, Status: corev1.ConditionTrue, Reason: "FailedCreate",
					Message: `pods "web-new-x7k2p" is forbidden: exceeded quota: pods, requested: pods=1, used: pods=10, limited: pods=10`,
				}}
			},
			want: status.Result{
				Phase: status.Failed, Reason: "FailedCreate",
				Message: `replica set web-new: pods "web-new-x7k2p" is forbidden: exceeded quota: pods, requested: pods=1, used: pods=10, limited: pods=10`,
				Desired: 1,
			},
		},
		{
			name: "FailedCreate on the deployment",
			setup: func(w *world) {
				w.notReady()
				w.pods = nil
				w.d.Status.Conditions = append(w.d.Status.Conditions, appsv1.DeploymentCondition{
					Type: appsv1.DeploymentReplicaFailure, Status: corev1.ConditionTrue, Reason: "FailedCreate",
					Message: `pods "web-new-x7k2p" is forbidden: violates PodSecurity "restricted:latest"`,
				})
			},
			want: status.Result{
				Phase: status.Failed, Reason: "FailedCreate",
				Message: `deployment web: pods "web-new-x7k2p" is forbidden: violates PodSecurity "restricted:latest"`,
				Desired: 1,
			},
		},
		{
			name: "ProgressDeadlineExceeded",
			setup: func(w *world) {
				w.notReady()
				waiting(w.pod(), "ContainerCreating", "")
				w.d.Status.Conditions = []appsv1.DeploymentCondition{{
					Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse, Reason: "ProgressDeadlineExceeded",
					Message: `ReplicaSet "web-new" has timed out progressing.`,
				}}
			},
			want: status.Result{
				Phase: status.Failed, Reason: "ProgressDeadlineExceeded",
				Message: `deployment web: progress deadline exceeded: ReplicaSet "web-new" has timed out progressing.`,
				Desired: 1, Updated: 1,
			},
		},

		// Unschedulable, unready and late.
		{
			name: "Unschedulable before the limit",
			setup: func(w *world) {
				w.notReady()
				p := w.pod()
				p.Status = corev1.PodStatus{Phase: corev1.PodPending}
				setCondition(p, corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable", Message: "0/1 nodes are available: 1 Insufficient memory."})
				w.now = 19 * time.Second
			},
			want: status.Result{
				Phase: status.Progressing, Reason: "Unschedulable", Pod: "web-new-1",
				Message: "pod web-new-1: not scheduled: 0/1 nodes are available: 1 Insufficient memory.",
				Desired: 1, Updated: 1,
			},
		},
		{
			name: "Unschedulable at the limit",
			setup: func(w *world) {
				w.notReady()
				p := w.pod()
				p.Status = corev1.PodStatus{Phase: corev1.PodPending}
				setCondition(p, corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable", Message: "0/1 nodes are available: 1 Insufficient memory."})
				w.now = limit
			},
			want: status.Result{
				Phase: status.Failed, Reason: "Unschedulable", Pod: "web-new-1",
				Message: "pod web-new-1: not scheduled within 20s: 0/1 nodes are available: 1 Insufficient memory.",
				Desired: 1, Updated: 1,
			},
		},
		{
			name: "not ready past the limit",
			setup: func(w *world) {
				w.notReady()
				unready(w.pod())
				w.now = 21 * time.Second
			},
			want: status.Result{
				Phase: status.Failed, Reason: "NotReady", Pod: "web-new-1",
				Message: "pod web-new-1: container node: did not become ready within 20s: containers with unready status: [node]",
				Desired: 1, Updated: 1,
			},
		},
		{
			name: "timeout: old pod never went away",
			setup: func(w *world) {
				w.notReady()
				old := readyPod(w.oldRS, "web-old-1")
				old.DeletionTimestamp = ptr(at(time.Second))
				w.pods = []*corev1.Pod{old}
				w.now = limit
			},
			want: status.Result{
				Phase: status.Failed, Reason: "Timeout",
				Message: "not ready within 20s: 1 of 1 new pods not ready; 1 old pod still present",
				Desired: 1, OldPods: 1,
			},
		},
		{
			name: "timeout: pod stuck creating names the pod",
			setup: func(w *world) {
				w.notReady()
				waiting(w.pod(), "ContainerCreating", "")
				w.now = limit
			},
			want: status.Result{
				Phase: status.Failed, Reason: "Timeout", Pod: "web-new-1",
				Message: "not ready within 20s: 1 of 1 new pods not ready (pod web-new-1: pending, container node waiting (ContainerCreating))",
				Desired: 1, Updated: 1,
			},
		},
		{
			name: "timeout: generation never observed",
			setup: func(w *world) {
				w.d.Generation = 3
				w.now = time.Minute
			},
			want: status.Result{
				Phase: status.Failed, Reason: "Timeout",
				Message: "not done within 20s: deployment web: generation 3 not yet observed by the controller (observed 2)",
				Desired: 1,
			},
		},

		// No replicas.
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

func TestScaledDown(t *testing.T) {
	// scaled is web after `replicas: 0`: the controller has scaled web-new to 0.
	scaled := func(w *world) {
		w.d.Spec.Replicas = ptr(int32(0))
		w.d.Generation, w.d.Status.ObservedGeneration = 3, 3
		w.newRS.Spec.Replicas = ptr(int32(0))
	}
	tests := []struct {
		name  string
		setup func(w *world)
		want  status.Result
	}{
		{
			name: "no pod left",
			setup: func(w *world) {
				scaled(w)
				w.pods = nil
			},
			want: status.Result{Phase: status.Ready, Message: "no pods remain"},
		},
		{
			name: "a terminating pod still counts",
			setup: func(w *world) {
				scaled(w)
				w.pod().DeletionTimestamp = ptr(at(2 * time.Second))
			},
			want: status.Result{Phase: status.Progressing, Message: "1 pod still present (web-new-1)"},
		},
		{
			name: "pods of both replica sets",
			setup: func(w *world) {
				scaled(w)
				w.pods = append(w.pods, readyPod(w.oldRS, "web-old-1"))
			},
			want: status.Result{Phase: status.Progressing, Message: "2 pods still present (web-new-1, web-old-1)", Ready: 1, Updated: 1, OldPods: 1},
		},
		{
			name: "a succeeded pod is gone",
			setup: func(w *world) {
				scaled(w)
				w.pod().Status.Phase = corev1.PodSucceeded
			},
			want: status.Result{Phase: status.Ready, Message: "no pods remain"},
		},
		{
			name: "replica set not yet scaled",
			setup: func(w *world) {
				scaled(w)
				w.newRS.Spec.Replicas = ptr(int32(1))
			},
			want: status.Result{Phase: status.Progressing, Message: "replica set web-new still wants 1 pod; 1 pod still present (web-new-1)", Ready: 1, Updated: 1},
		},
		{
			name: "generation not observed",
			setup: func(w *world) {
				scaled(w)
				w.d.Status.ObservedGeneration = 2
			},
			want: status.Result{Phase: status.Progressing, Message: "deployment web: generation 3 not yet observed by the controller (observed 2)"},
		},
		{
			name: "deployment not scaled to 0",
			want: status.Result{Phase: status.Progressing, Message: "deployment web: wants 1 replica, not 0", Desired: 1},
		},
		{
			name: "pod still there at the limit",
			setup: func(w *world) {
				scaled(w)
				w.pod().DeletionTimestamp = ptr(at(2 * time.Second))
				w.now = limit
			},
			want: status.Result{Phase: status.Failed, Reason: "Timeout", Message: "not done within 20s: 1 pod still present (web-new-1)"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := done()
			if tt.setup != nil {
				tt.setup(w)
			}
			got := status.ScaledDown(w.input())
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ScaledDown (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("nil deployment", func(t *testing.T) {
		got := status.ScaledDown(status.Input{Now: t0})
		want := status.Result{Phase: status.Progressing, Message: "deployment not found"}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("ScaledDown (-want +got):\n%s", diff)
		}
	})
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
