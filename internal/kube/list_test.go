package kube

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/utils/ptr"
)

var deploymentGVK = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}

// deploymentList is a LIST response of n Deployments shaped like slipway's, with the numbers
// (replicas, ports, quantities, a fractional annotation value) a decoder could get wrong.
func deploymentList(t testing.TB, n int) []byte {
	t.Helper()
	list := appsv1.DeploymentList{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "DeploymentList"},
		ListMeta: metav1.ListMeta{ResourceVersion: "42"}}
	for i := range n {
		name := fmt.Sprintf("n%04d", i)
		labels := map[string]string{"app.kubernetes.io/name": name, "slipway.dev/group": "g"}
		list.Items = append(list.Items, appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Labels: labels, Generation: int64(i + 1),
				Annotations: map[string]string{"ratio": "0.5"}},
			Spec: appsv1.DeploymentSpec{
				Replicas: ptr.To[int32](1),
				Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{
						Name: "node", Image: "reg/ns/" + name + "@sha256:0123",
						Ports:     []corev1.ContainerPort{{ContainerPort: 80}},
						Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("512Mi")}},
					}}},
				},
			},
			Status: appsv1.DeploymentStatus{ObservedGeneration: int64(i + 1), ReadyReplicas: 1},
		})
	}
	raw, err := json.Marshal(list)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// The one-pass decoding gives exactly the objects the dynamic client's decoding gives.
func TestDecodeListMatchesUnstructuredList(t *testing.T) {
	for _, n := range []int{0, 1, 50} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			raw := deploymentList(t, n)
			var want unstructured.UnstructuredList
			if err := want.UnmarshalJSON(raw); err != nil {
				t.Fatal(err)
			}
			got, err := decodeList(raw, deploymentGVK)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(want.Items) {
				t.Fatalf("%d items, want %d", len(got), len(want.Items))
			}
			for i := range got {
				w := want.Items[i].DeepCopy()
				w.SetGroupVersionKind(deploymentGVK)
				if diff := cmp.Diff(w.Object, got[i].Object); diff != "" {
					t.Errorf("item %d (-want +got):\n%s", i, diff)
				}
			}
		})
	}
	if _, err := decodeList([]byte(`{"items": [`), deploymentGVK); err == nil {
		t.Error("a truncated list decoded without error")
	}
}

// go test ./internal/kube -run '^$' -bench List -benchmem
func BenchmarkDecodeList(b *testing.B) {
	raw := deploymentList(b, 1000)
	b.Run("unstructured.UnstructuredList", func(b *testing.B) {
		for b.Loop() {
			var l unstructured.UnstructuredList
			if err := l.UnmarshalJSON(raw); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decodeList", func(b *testing.B) {
		for b.Loop() {
			if _, err := decodeList(raw, deploymentGVK); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// go test ./internal/kube -run '^$' -bench ItemMaps -benchmem: the items of a protobuf LIST
// into maps, by the JSON round trip, by runtime's converter and by jsonMap.
func BenchmarkItemMaps(b *testing.B) {
	var list appsv1.DeploymentList
	if err := json.Unmarshal(deploymentList(b, 1000), &list); err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		conv func(obj *appsv1.Deployment) (map[string]any, error)
	}{
		{"json-round-trip", func(obj *appsv1.Deployment) (map[string]any, error) {
			raw, err := json.Marshal(obj)
			if err != nil {
				return nil, err
			}
			var m map[string]any
			return m, utiljson.Unmarshal(raw, &m)
		}},
		{"runtime-converter", func(obj *appsv1.Deployment) (map[string]any, error) {
			return runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		}},
		{"jsonMap", func(obj *appsv1.Deployment) (map[string]any, error) {
			m, ok := jsonMap(obj)
			if !ok {
				return nil, fmt.Errorf("declined")
			}
			return m, nil
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				for i := range list.Items {
					if _, err := c.conv(&list.Items[i]); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
