package kube

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"slipway.dev/slipway/internal/status"
)

// loadStatusFixture reads one of status's fixtures (objects as the dev cluster returns them)
// into an Input, each object passed through transform first.
func loadStatusFixture(t *testing.T, name string, transform func(any) (any, error)) status.Input {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "status", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	var in status.Input
	for i, doc := range bytes.Split(data, []byte("\n---\n")) {
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &tm); err != nil {
			t.Fatalf("%s: document %d: %v", name, i, err)
		}
		var obj any
		switch tm.Kind {
		case "Deployment":
			obj = &appsv1.Deployment{}
		case "ReplicaSet":
			obj = &appsv1.ReplicaSet{}
		case "Pod":
			obj = &corev1.Pod{}
		case "Event":
			obj = &corev1.Event{}
		}
		if err := yaml.Unmarshal(doc, obj); err != nil {
			t.Fatalf("%s: document %d: %v", name, i, err)
		}
		if obj, err = transform(obj); err != nil {
			t.Fatal(err)
		}
		switch o := obj.(type) {
		case *appsv1.Deployment:
			in.Deployment = o
		case *appsv1.ReplicaSet:
			in.ReplicaSets = append(in.ReplicaSets, o)
		case *corev1.Pod:
			in.Pods = append(in.Pods, o)
		case *corev1.Event:
			in.Events = append(in.Events, o)
		}
	}
	return in
}

// The watch cache keeps of a pod only what its readers read: status computed from what it
// keeps is status computed from the whole objects, at every moment of the fixtures' rollouts.
func TestForTheWaitKeepsWhatStatusReads(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	keepAll := func(obj any) (any, error) { return obj, nil }
	for _, file := range []string{"crashloop.yaml", "pull-error.yaml"} {
		full, slim := loadStatusFixture(t, file, keepAll), loadStatusFixture(t, file, forTheWait)
		for s := 0; s <= 30; s += 2 {
			for _, in := range []*status.Input{&full, &slim} {
				in.Since, in.Now, in.Limit = t0, t0.Add(time.Duration(s)*time.Second), 10*time.Second
			}
			want, got := status.Rollout(full), status.Rollout(slim)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("%s at %ds: Rollout of the cached objects differs (-whole +cached):\n%s", file, s, diff)
			}
			if diff := cmp.Diff(status.ScaledDown(full), status.ScaledDown(slim)); diff != "" {
				t.Errorf("%s at %ds: ScaledDown differs (-whole +cached):\n%s", file, s, diff)
			}
			if diff := cmp.Diff(status.Events(full, want.Pod, 10), status.Events(slim, got.Pod, 10)); diff != "" {
				t.Errorf("%s at %ds: Events differ (-whole +cached):\n%s", file, s, diff)
			}
		}
	}
}

// A pod as the dev cluster returns one of slipway's (a state init container, a projected
// token, the claim) is held at a fraction of its size, with its status whole.
func TestForTheWaitSlimsPods(t *testing.T) {
	in := loadStatusFixture(t, "crashloop.yaml", func(obj any) (any, error) { return obj, nil })
	var pod *corev1.Pod
	for _, p := range in.Pods {
		if len(p.Spec.Containers) > 0 {
			pod = p
		}
	}
	if pod == nil {
		t.Fatal("no pod in the fixture")
	}
	pod.Annotations = map[string]string{"kubectl.kubernetes.io/restartedAt": "2026-01-01T12:00:00Z"}
	pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: "state", VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "web-state"}}})
	pod.Spec.Containers[0].Env = append(pod.Spec.Containers[0].Env, corev1.EnvVar{Name: "SLIPWAY_NODE", Value: "web"})
	pod.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate}}
	wantStatus := pod.Status.DeepCopy()
	obj, err := forTheWait(pod.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	got := obj.(*corev1.Pod)
	before, _ := json.Marshal(pod.Spec)
	after, _ := json.Marshal(got.Spec)
	if len(after)*4 > len(before) {
		t.Errorf("the cached pod's spec is %d bytes of JSON, the whole one's %d: want at most a quarter", len(after), len(before))
	}
	if diff := cmp.Diff(*wantStatus, got.Status); diff != "" {
		t.Errorf("the cached pod's status differs (-whole +cached):\n%s", diff)
	}
	if got.Spec.NodeName != pod.Spec.NodeName || got.Spec.Containers[0].Name != pod.Spec.Containers[0].Name ||
		got.Spec.Volumes != nil || got.Spec.Containers[0].Env != nil || got.Annotations != nil || got.ManagedFields != nil {
		t.Errorf("the cached pod's spec is %+v, want only its node and its containers' names", got.Spec)
	}
	if diff := cmp.Diff(pod.Labels, got.Labels); diff != "" {
		t.Errorf("labels differ:\n%s", diff)
	}
}
