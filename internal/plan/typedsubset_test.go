package plan_test

import (
	"fmt"
	"sort"
	"strings"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"

	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/render"
	"slipway.dev/slipway/internal/spec"
)

// typedFixtures are the groups whose rendered objects the typed comparison is checked on:
// between them every kind and field render makes.
var typedFixtures = []string{
	"../render/testdata/group/slipway.yaml",
	"../../examples/hello/slipway.yaml",
	"../../examples/full/slipway.yaml",
	"../../examples/publish/slipway.yaml",
	"../render/testdata/workload/labels.yaml",
	"../render/testdata/workload/placement.yaml",
	"../render/testdata/workload/disruption.yaml",
	"../render/testdata/workload/probes.yaml",
	"../render/testdata/workload/config.yaml",
}

func renderedObjects(t *testing.T) []render.Object {
	t.Helper()
	t.Setenv("SLIPWAY_RENDER_TOKEN", "render-fixture-token") // read by the config fixtures' secrets
	t.Setenv("APP_TOKEN", "example")                         // and these by examples/full's
	t.Setenv("SSO_CLIENT_SECRET", "example")
	t.Setenv("SLIPWAY_TSIG_SECRET", "c2VjcmV0") // examples/publish names a DNS server
	var out []render.Object
	for _, f := range typedFixtures {
		g, err := spec.Load(f)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		in := render.Input{Group: g, Images: map[string]string{}, MachineIDs: map[string]string{}, StopSignal: true, SecretKey: []byte("plan-test-key-of-32-bytes-long!!")}
		for _, n := range g.Nodes {
			in.Images[n.Name] = "registry.test/" + n.Name + "@sha256:" + strings.Repeat("a", 64)
			in.MachineIDs[n.Name] = strings.Repeat("b", 32)
			for _, r := range n.Roles {
				key := spec.RoleObjectName(n.Name, r.Name)
				in.Images[key] = "registry.test/" + key + "@sha256:" + strings.Repeat("c", 64)
				in.MachineIDs[n.Name+"/"+r.Name] = strings.Repeat("d", 32)
			}
		}
		objs, err := render.Objects(in)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out = append(out, objs...)
	}
	return out
}

// eachMutation calls check with a copy of u that has one of its leaves changed, dropped,
// emptied or nulled, for every leaf and every mutation that applies to it.
func eachMutation(u map[string]any, check func(what string, have map[string]any)) {
	for _, p := range leafPaths(u, nil) {
		for _, m := range mutations {
			have := runtime.DeepCopyJSON(u)
			if m.apply(have, p) {
				check(fmt.Sprintf("%s %s", m.name, strings.Join(p, ".")), have)
			}
		}
	}
}

// TestSubsetTypedIsSubsetOfTheConversion checks the typed comparison against Subset of the
// converted object, on every rendered object of the fixtures, as it is, with fields the server
// would add, and with each of its leaves changed, dropped, emptied or nulled in turn: the two
// must agree every time, and above all the typed one must never find unchanged what Subset
// finds changed.
func TestSubsetTypedIsSubsetOfTheConversion(t *testing.T) {
	objs := renderedObjects(t)
	if len(objs) < 40 {
		t.Fatalf("only %d rendered objects", len(objs))
	}
	// One parallel subtest an object; the kinds and counts add up once all have run.
	kinds := map[string]bool{}
	var cases atomic.Int64
	t.Run("objects", func(t *testing.T) {
		for _, obj := range objs {
			kind := obj.GetObjectKind().GroupVersionKind().Kind
			kinds[kind] = true
			t.Run(kind+"/"+obj.GetName(), func(t *testing.T) {
				t.Parallel()
				cases.Add(checkTyped(t, obj))
			})
		}
	})
	for _, k := range []string{"Namespace", "NetworkPolicy", "ServiceAccount", "PersistentVolumeClaim", "Service", "Deployment", "ConfigMap", "Secret", "PodDisruptionBudget"} {
		if !kinds[k] {
			t.Errorf("no %s among the fixtures' objects", k)
		}
	}
	t.Logf("%d objects, %d comparisons", len(objs), cases.Load())
}

// checkTyped checks one object of TestSubsetTypedIsSubsetOfTheConversion and returns how many
// comparisons it made.
func checkTyped(t *testing.T, obj render.Object) (cases int64) {
	t.Helper()
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		t.Fatal(err)
	}
	kind := obj.GetObjectKind().GroupVersionKind().Kind
	name := kind + "/" + obj.GetName()
	check := func(what string, have map[string]any) {
		t.Helper()
		cases++
		want := plan.Subset(u, have)
		if got := plan.SubsetTyped(obj, have); got != want {
			t.Errorf("%s, %s: SubsetTyped %v, Subset of the conversion %v", name, what, got, want)
		}
	}
	check("as rendered", runtime.DeepCopyJSON(u))
	defaulted := runtime.DeepCopyJSON(u)
	if st, ok := defaulted["status"].(map[string]any); ok {
		st["observedGeneration"] = int64(3)
	} else {
		defaulted["status"] = map[string]any{"observedGeneration": int64(3)}
	}
	md := defaulted["metadata"].(map[string]any)
	md["uid"], md["resourceVersion"], md["creationTimestamp"] = "u-1", "42", "2026-12-02T00:00:00Z"
	check("with the server's fields", defaulted)
	if !plan.SubsetTyped(obj, defaulted) {
		t.Errorf("%s: not found unchanged against itself with the server's fields", name)
	}
	eachMutation(u, check)
	return cases
}

// TestSubsetTypedOfTypesThatConvertThemselves covers the fields with a conversion of their
// own (quantities, int-or-strings, times) and empty values against absent and null ones.
func TestSubsetTypedOfTypesThatConvertThemselves(t *testing.T) {
	pvc := &corev1.PersistentVolumeClaim{
		TypeMeta:   metav1.TypeMeta{Kind: "PersistentVolumeClaim", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{Name: "a", Labels: map[string]string{}},
		Spec: corev1.PersistentVolumeClaimSpec{Resources: corev1.VolumeResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}},
	}
	svc := &corev1.Service{
		TypeMeta:   metav1.TypeMeta{Kind: "Service", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{Name: "a"},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(80)},
			{Name: "x", Port: 81, TargetPort: intstr.FromString("http")}}},
	}
	for _, obj := range []runtime.Object{pvc, svc} {
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		if err != nil {
			t.Fatal(err)
		}
		variants := []func(map[string]any){
			func(map[string]any) {},
			func(h map[string]any) { delete(h["metadata"].(map[string]any), "labels") },
			func(h map[string]any) { h["metadata"].(map[string]any)["labels"] = nil },
			func(h map[string]any) { h["metadata"].(map[string]any)["labels"] = "x" },
			func(h map[string]any) { h["metadata"].(map[string]any)["creationTimestamp"] = "2026-12-02T00:00:00Z" },
		}
		if _, ok := obj.(*corev1.PersistentVolumeClaim); ok {
			variants = append(variants,
				func(h map[string]any) { setPath(h, "2Gi", "spec", "resources", "requests", "storage") },
				func(h map[string]any) { setPath(h, "1024Mi", "spec", "resources", "requests", "storage") })
		} else {
			variants = append(variants,
				func(h map[string]any) {
					h["spec"].(map[string]any)["ports"].([]any)[0].(map[string]any)["targetPort"] = "80"
				},
				func(h map[string]any) {
					h["spec"].(map[string]any)["ports"].([]any)[1].(map[string]any)["targetPort"] = int64(8080)
				})
		}
		for i, v := range variants {
			have := runtime.DeepCopyJSON(u)
			v(have)
			if got, want := plan.SubsetTyped(obj, have), plan.Subset(u, have); got != want {
				t.Errorf("%T, variant %d: SubsetTyped %v, Subset of the conversion %v", obj, i, got, want)
			}
		}
	}
}

func setPath(m map[string]any, v any, path ...string) {
	for _, p := range path[:len(path)-1] {
		m = m[p].(map[string]any)
	}
	m[path[len(path)-1]] = v
}

// leafPaths lists the paths of v's values that are maps' entries, down to every leaf (list
// items are named by index).
func leafPaths(v any, prefix []string) [][]string {
	var out [][]string
	switch t := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			p := append(append([]string(nil), prefix...), k)
			out = append(out, p)
			out = append(out, leafPaths(t[k], p)...)
		}
	case []any:
		for i, x := range t {
			p := append(append([]string(nil), prefix...), fmt.Sprint("#", i))
			out = append(out, p)
			out = append(out, leafPaths(x, p)...)
		}
	}
	return out
}

type mutation struct {
	name  string
	apply func(root map[string]any, path []string) bool
}

// mutations are the edits made at each path: each reports whether it applied.
var mutations = []mutation{
	{"drop", func(root map[string]any, p []string) bool {
		return edit(root, p, func(parent any, key string) bool {
			if m, ok := parent.(map[string]any); ok {
				delete(m, key)
				return true
			}
			l := parent.([]any)
			i := index(key)
			copy(l[i:], l[i+1:])
			l[len(l)-1] = map[string]any{"extra": "item"}
			return true
		})
	}},
	{"null", set(func(any) any { return nil })},
	{"empty", set(func(v any) any {
		switch v.(type) {
		case map[string]any:
			return map[string]any{}
		case []any:
			return []any{}
		case string:
			return ""
		}
		return int64(0)
	})},
	{"change", set(func(v any) any {
		switch t := v.(type) {
		case string:
			return t + "x"
		case int64:
			return t + 1
		case float64:
			return t + 1
		case bool:
			return !t
		case map[string]any:
			c := runtime.DeepCopyJSONValue(t).(map[string]any)
			c["zz-added"] = "x"
			return c
		case []any:
			return append(runtime.DeepCopyJSONValue(t).([]any), "x")
		}
		return "x"
	})},
	{"retype", set(func(v any) any {
		switch t := v.(type) {
		case string:
			return int64(len(t))
		case int64:
			return fmt.Sprint(t)
		case bool:
			return fmt.Sprint(t)
		}
		return "x"
	})},
}

func set(f func(any) any) func(map[string]any, []string) bool {
	return func(root map[string]any, p []string) bool {
		return edit(root, p, func(parent any, key string) bool {
			if m, ok := parent.(map[string]any); ok {
				m[key] = f(m[key])
				return true
			}
			l := parent.([]any)
			l[index(key)] = f(l[index(key)])
			return true
		})
	}
}

func index(key string) int {
	var i int
	_, _ = fmt.Sscanf(key, "#%d", &i)
	return i
}

// edit walks root to the parent of path's last element and calls f on it.
func edit(root map[string]any, path []string, f func(parent any, key string) bool) bool {
	var cur any = root
	for _, k := range path[:len(path)-1] {
		switch t := cur.(type) {
		case map[string]any:
			cur = t[k]
		case []any:
			cur = t[index(k)]
		default:
			return false
		}
	}
	return f(cur, path[len(path)-1])
}

// A value the walk cannot read (an unexported field of a type that converts itself) proves
// nothing: false, not a panic.
func TestSubsetTypedOfWhatItCannotRead(t *testing.T) {
	type odd struct {
		A string
		b metav1.Time
	}
	if plan.SubsetTyped(&odd{A: "x", b: metav1.Now()}, map[string]any{"A": "x"}) {
		t.Error("an object with an unreadable field was found unchanged")
	}
	if !plan.SubsetTyped(&struct{ A string }{A: "x"}, map[string]any{"A": "x"}) {
		t.Error("a plain object was not found unchanged")
	}
}

func TestLabel(t *testing.T) {
	for _, tc := range []struct {
		name string
		obj  map[string]any
		want string
	}{
		{"set", map[string]any{"metadata": map[string]any{"labels": map[string]any{"k": "v"}}}, "v"},
		{"another label", map[string]any{"metadata": map[string]any{"labels": map[string]any{"j": "v"}}}, ""},
		{"no labels", map[string]any{"metadata": map[string]any{}}, ""},
		{"no metadata", map[string]any{}, ""},
		{"not a string", map[string]any{"metadata": map[string]any{"labels": map[string]any{"k": int64(1)}}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := plan.Label(&unstructured.Unstructured{Object: tc.obj}, "k"); got != tc.want {
				t.Errorf("Label = %q, want %q", got, tc.want)
			}
		})
	}
}
