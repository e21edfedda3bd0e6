package status_test

import (
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"slipway.dev/slipway/internal/status"
)

// t0 is when the rollout under test was applied; pods are created a second later.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

const (
	ns       = "demo"
	limit    = 20 * time.Second
	imageOld = "registry.test:5000/demo/web@sha256:0000000000000000000000000000000000000000000000000000000000000001"
	imageNew = "registry.test:5000/demo/web@sha256:0000000000000000000000000000000000000000000000000000000000000002"
)

func at(d time.Duration) metav1.Time { return metav1.NewTime(t0.Add(d)) }

func ptr[T any](v T) *T { return &v }

// world is the Deployment web of namespace demo moved from imageOld (ReplicaSet web-old,
// revision 1) to imageNew (web-new, revision 2), its pods and events. done() is the finished
// rollout; each test changes what it needs.
type world struct {
	d      *appsv1.Deployment
	oldRS  *appsv1.ReplicaSet
	newRS  *appsv1.ReplicaSet
	pods   []*corev1.Pod
	events []*corev1.Event
	now    time.Duration // since t0
}

func (w *world) input() status.Input {
	var rss []*appsv1.ReplicaSet
	for _, rs := range []*appsv1.ReplicaSet{w.oldRS, w.newRS} {
		if rs != nil {
			rss = append(rss, rs)
		}
	}
	return status.Input{
		Deployment:  w.d,
		ReplicaSets: rss,
		Pods:        w.pods,
		Events:      w.events,
		Now:         t0.Add(w.now),
		Since:       t0,
		Limit:       limit,
	}
}

func template(name, image string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app.kubernetes.io/name": name}},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name:  "node",
				Image: image,
				ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{
					Exec: &corev1.ExecAction{Command: []string{"systemctl", "is-system-running"}},
				}},
			}},
			RestartPolicy: corev1.RestartPolicyAlways,
		},
	}
}

func deployment(name, uid, image string, replicas int32) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: ns, UID: types.UID(uid), Generation: 2,
			Annotations: map[string]string{"deployment.kubernetes.io/revision": "2"},
		},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app.kubernetes.io/name": name}},
			Template: template(name, image),
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType},
		},
		Status: appsv1.DeploymentStatus{
			ObservedGeneration: 2,
			Replicas:           replicas, UpdatedReplicas: replicas, ReadyReplicas: replicas, AvailableReplicas: replicas,
			Conditions: []appsv1.DeploymentCondition{{
				Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable",
			}},
		},
	}
}

// replicaSet is a ReplicaSet of d with the given image; ready pods per its status.
func replicaSet(d *appsv1.Deployment, name, hash string, revision string, image string, replicas int32) *appsv1.ReplicaSet {
	tmpl := template(d.Name, image)
	tmpl.Labels["pod-template-hash"] = hash
	return &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: d.Namespace, UID: types.UID(name + "-uid"), Generation: 1,
			Labels:          map[string]string{"app.kubernetes.io/name": d.Name, "pod-template-hash": hash},
			Annotations:     map[string]string{"deployment.kubernetes.io/revision": revision},
			OwnerReferences: []metav1.OwnerReference{controller("Deployment", d.Name, d.UID)},
		},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: ptr(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app.kubernetes.io/name": d.Name, "pod-template-hash": hash}},
			Template: tmpl,
		},
		Status: appsv1.ReplicaSetStatus{
			ObservedGeneration: 1,
			Replicas:           replicas, FullyLabeledReplicas: replicas, ReadyReplicas: replicas, AvailableReplicas: replicas,
		},
	}
}

func controller(kind, name string, uid types.UID) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: "apps/v1", Kind: kind, Name: name, UID: uid, Controller: ptr(true)}
}

// readyPod is a pod of rs, running and ready, created a second after t0.
func readyPod(rs *appsv1.ReplicaSet, name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: rs.Namespace, UID: types.UID(name + "-uid"),
			CreationTimestamp: at(time.Second),
			Labels:            rs.Spec.Template.Labels,
			OwnerReferences:   []metav1.OwnerReference{controller("ReplicaSet", rs.Name, rs.UID)},
		},
		Spec: rs.Spec.Template.Spec,
		Status: corev1.PodStatus{
			Phase: corev1.PodRunning,
			Conditions: []corev1.PodCondition{
				{Type: corev1.PodScheduled, Status: corev1.ConditionTrue},
				{Type: corev1.PodInitialized, Status: corev1.ConditionTrue},
				{Type: corev1.ContainersReady, Status: corev1.ConditionTrue},
				{Type: corev1.PodReady, Status: corev1.ConditionTrue},
			},
			ContainerStatuses: []corev1.ContainerStatus{{
				Name: "node", Image: rs.Spec.Template.Spec.Containers[0].Image, Ready: true, Started: ptr(true),
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: at(2 * time.Second)}},
			}},
		},
	}
}

// done is the finished rollout: web-new has its pod web-new-1 ready, web-old is at 0.
func done() *world {
	d := deployment("web", "web-uid", imageNew, 1)
	oldRS := replicaSet(d, "web-old", "old", "1", imageOld, 0)
	newRS := replicaSet(d, "web-new", "new", "2", imageNew, 1)
	return &world{d: d, oldRS: oldRS, newRS: newRS, pods: []*corev1.Pod{readyPod(newRS, "web-new-1")}, now: 5 * time.Second}
}

// notReady makes the status of rs and d say that none of its pods is ready.
func (w *world) notReady() {
	w.newRS.Status.ReadyReplicas, w.newRS.Status.AvailableReplicas = 0, 0
	w.d.Status.ReadyReplicas, w.d.Status.AvailableReplicas = 0, 0
	w.d.Status.UnavailableReplicas = 1
}

// pod is the new ReplicaSet's pod web-new-1.
func (w *world) pod() *corev1.Pod {
	for _, p := range w.pods {
		if p.Name == "web-new-1" {
			return p
		}
	}
	panic("no pod web-new-1")
}

// unready marks a pod as not ready, keeping its containers' states.
func unready(p *corev1.Pod) {
	for i := range p.Status.Conditions {
		switch p.Status.Conditions[i].Type {
		case corev1.PodReady, corev1.ContainersReady:
			p.Status.Conditions[i].Status = corev1.ConditionFalse
			p.Status.Conditions[i].Reason = "ContainersNotReady"
			p.Status.Conditions[i].Message = "containers with unready status: [node]"
		}
	}
	for i := range p.Status.ContainerStatuses {
		p.Status.ContainerStatuses[i].Ready = false
	}
}

// waiting puts the pod's container node in the waiting state.
func waiting(p *corev1.Pod, reason, msg string) {
	unready(p)
	p.Status.Phase = corev1.PodPending
	cs := &p.Status.ContainerStatuses[0]
	cs.Started = ptr(false)
	cs.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: msg}}
}

// setCondition sets or adds a pod condition.
func setCondition(p *corev1.Pod, c corev1.PodCondition) {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == c.Type {
			p.Status.Conditions[i] = c
			return
		}
	}
	p.Status.Conditions = append(p.Status.Conditions, c)
}

func event(name, kind, object string, uid types.UID, reason, msg string, first, last time.Duration, count int32) *corev1.Event {
	return &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: name, Namespace: ns},
		InvolvedObject: corev1.ObjectReference{Kind: kind, Namespace: ns, Name: object, UID: uid},
		Reason:         reason,
		Message:        msg,
		FirstTimestamp: at(first),
		LastTimestamp:  at(last),
		Count:          count,
		Type:           corev1.EventTypeWarning,
	}
}
