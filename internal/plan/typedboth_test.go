package plan_test

import (
	"encoding/json"
	"reflect"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utiljson "k8s.io/apimachinery/pkg/util/json"

	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/render"
)

// roundTrip is what a JSON LIST gives of a typed object: its JSON read back into maps.
func roundTrip(t *testing.T, obj any) map[string]any {
	t.Helper()
	b, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := utiljson.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// typedAs decodes the map m into a new object of obj's type, as the API server's protobuf
// would give it to a LIST; ok is false when m does not fit the type (a retyped field).
func typedAs(obj any, m map[string]any) (any, bool) {
	b, err := json.Marshal(m)
	if err != nil {
		return nil, false
	}
	out := reflect.New(reflect.TypeOf(obj).Elem()).Interface()
	if err := json.Unmarshal(b, out); err != nil {
		return nil, false
	}
	return out, true
}

// TestSubsetBothTypedIsSubsetOfTheMaps checks the comparison of two typed objects against
// Subset of the desired one's conversion and the live one's JSON round trip, on every rendered
// object of the fixtures, as it is, with the fields the server adds, and with each of its
// leaves changed, dropped, emptied or nulled in turn (each decoded into the typed live
// object): it must never find unchanged what Subset finds changed, and must find unchanged
// every object as rendered.
func TestSubsetBothTypedIsSubsetOfTheMaps(t *testing.T) {
	objs := renderedObjects(t)
	// One parallel subtest an object; the counts add up once all have run.
	var cases, agreed atomic.Int64
	t.Run("objects", func(t *testing.T) {
		for _, obj := range objs {
			kind := obj.GetObjectKind().GroupVersionKind().Kind
			t.Run(kind+"/"+obj.GetName(), func(t *testing.T) {
				t.Parallel()
				c, a := checkBothTyped(t, obj)
				cases.Add(c)
				agreed.Add(a)
			})
		}
	})
	n, a := cases.Load(), agreed.Load()
	t.Logf("%d objects, %d comparisons, %d agreed with Subset of the maps", len(objs), n, a)
	if n < 1000 || a < n*9/10 {
		t.Errorf("%d comparisons, %d agreed: the typed comparison declines too often to be of use", n, a)
	}
}

// checkBothTyped checks one object of TestSubsetBothTypedIsSubsetOfTheMaps and returns how
// many comparisons it made and how many of them agreed with Subset of the maps.
func checkBothTyped(t *testing.T, obj render.Object) (cases, agreed int64) {
	t.Helper()
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		t.Fatal(err)
	}
	kind := obj.GetObjectKind().GroupVersionKind().Kind
	name := kind + "/" + obj.GetName()
	check := func(what string, have map[string]any) bool {
		t.Helper()
		typed, ok := typedAs(obj, have)
		if !ok {
			return false
		}
		cases++
		want := plan.Subset(u, roundTrip(t, typed))
		got := plan.SubsetBothTyped(obj, typed)
		if got && !want {
			t.Errorf("%s, %s: SubsetBothTyped found unchanged what Subset of the maps finds changed", name, what)
		}
		if got == want {
			agreed++
		}
		return got
	}
	if !check("as rendered", runtime.DeepCopyJSON(u)) {
		t.Errorf("%s: not found unchanged against itself", name)
	}
	defaulted := runtime.DeepCopyJSON(u)
	md := defaulted["metadata"].(map[string]any)
	md["uid"], md["resourceVersion"], md["creationTimestamp"] = "u-1", "42", "2026-12-02T00:00:00Z"
	md["generation"] = int64(3)
	if kind == "Deployment" {
		defaulted["status"] = map[string]any{"observedGeneration": int64(3), "replicas": int64(1)}
	}
	if !check("with the server's fields", defaulted) {
		t.Errorf("%s: not found unchanged against itself with the server's fields", name)
	}
	eachMutation(u, func(what string, have map[string]any) { check(what, have) })
	return cases, agreed
}

// TestSubsetBothTypedDeclines covers what it must not prove: objects of two types, nil ones,
// a live object that lacks what the desired one sets, and a value it cannot read.
func TestSubsetBothTypedDeclines(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "a", Labels: map[string]string{"k": "v"}}}
	type odd struct {
		A string
		b metav1.Time
	}
	for _, tc := range []struct {
		name       string
		want, have any
		same       bool
	}{
		{"itself", pod, pod.DeepCopy(), true},
		{"two types", pod, &corev1.Service{ObjectMeta: pod.ObjectMeta}, false},
		{"a nil live object", pod, (*corev1.Pod)(nil), false},
		{"not a pointer", *pod, *pod, false},
		{"a label missing", pod, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "a"}}, false},
		{"a label more", pod, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "a", Labels: map[string]string{"k": "v", "j": "w"}}}, true},
		{"an unreadable field", &odd{A: "x", b: metav1.Now()}, &odd{A: "x", b: metav1.Now()}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := plan.SubsetBothTyped(tc.want, tc.have); got != tc.same {
				t.Errorf("SubsetBothTyped = %v, want %v", got, tc.same)
			}
		})
	}
}
