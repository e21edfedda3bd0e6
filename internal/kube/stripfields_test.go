package kube

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// dropKey removes every object member named key from v, at any depth.
func dropKey(v any, key string) any {
	switch t := v.(type) {
	case map[string]any:
		delete(t, key)
		for k, c := range t {
			t[k] = dropKey(c, key)
		}
	case []any:
		for i, c := range t {
			t[i] = dropKey(c, key)
		}
	}
	return v
}

func TestWithoutManagedFields(t *testing.T) {
	mf := `[{"manager":"slipway","operation":"Apply","fieldsV1":{"f:metadata":{"f:labels":{"f:a]}\"":{}}}}}]`
	for _, tc := range []struct {
		name, in string
		found    bool
	}{
		{"none", `{"items":[{"metadata":{"name":"a"}}]}`, false},
		{"first member", `{"metadata":{"managedFields":` + mf + `,"name":"a"}}`, true},
		{"last member", `{"metadata":{"name":"a","managedFields":` + mf + `}}`, true},
		{"only member", `{"metadata":{"managedFields":` + mf + `}}`, true},
		{"every item", `{"items":[{"metadata":{"name":"a","managedFields":` + mf + `,"uid":"1"}},{"metadata":{"managedFields":[],"name":"b"}}]}`, true},
		{"null value", `{"metadata":{"managedFields":null,"name":"a"}}`, true},
		{"inside a string", `{"metadata":{"annotations":{"x":"{\"managedFields\":[1]}","y":"\\\\"},"name":"a"}}`, false},
		{"an annotation of that name", `{"metadata":{"annotations":{"managedFields":"x"},"managedFields":[],"name":"a"}}`, true},
		{"as a string value", `{"a":["managedFields",{"b":"\"managedFields\":"}]}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var want any
			if err := json.Unmarshal([]byte(tc.in), &want); err != nil {
				t.Fatalf("test input: %v", err)
			}
			want = dropKey(want, "managedFields")
			if tc.name == "an annotation of that name" {
				want.(map[string]any)["metadata"].(map[string]any)["annotations"] = map[string]any{"managedFields": "x"}
			}
			out, found := withoutManagedFields([]byte(tc.in))
			var got any
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatalf("output %s: %v", out, err)
			}
			if found != tc.found {
				t.Errorf("found = %v, want %v", found, tc.found)
			}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("(-want +got):\n%s\noutput: %s", d, out)
			}
		})
	}
}

// Issue 17: a LIST's managed-fields records cost nothing to decode. A list of Deployments
// that each carry two managers' records decodes in about the allocations of the same list
// without them (it took twice as many when the records were decoded, then dropped).
func TestDecodeListSkipsManagedFields(t *testing.T) {
	plain := deploymentList(t, 100)
	var l map[string]any
	if err := json.Unmarshal(plain, &l); err != nil {
		t.Fatal(err)
	}
	fields := map[string]any{}
	for i := range 40 {
		fields[fmt.Sprintf("f:field%d", i)] = map[string]any{"f:x": map[string]any{}, "f:y": map[string]any{}}
	}
	for _, it := range l["items"].([]any) {
		md := it.(map[string]any)["metadata"].(map[string]any)
		md["managedFields"] = []any{
			map[string]any{"manager": "slipway", "operation": string(metav1.ManagedFieldsOperationApply), "fieldsV1": fields},
			map[string]any{"manager": "kube-controller-manager", "operation": "Update", "subresource": "status", "fieldsV1": fields},
		}
	}
	withFields, err := json.Marshal(l)
	if err != nil {
		t.Fatal(err)
	}
	allocs := func(raw []byte) float64 {
		buf := make([]byte, len(raw))
		return testing.AllocsPerRun(5, func() {
			copy(buf, raw) // decodeList reuses its input
			if _, err := decodeList(buf, deploymentGVK); err != nil {
				t.Fatal(err)
			}
		})
	}
	base, got := allocs(plain), allocs(withFields)
	if got > base*1.1 {
		t.Errorf("decoding 100 Deployments with managed fields: %.0f allocations, without them %.0f: want at most 1.1 ×", got, base)
	}
	objs, err := decodeList(withFields, deploymentGVK)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := objs[0].Object["metadata"].(map[string]any)["managedFields"]; ok || objs[0].GetName() != "n0000" {
		t.Errorf("decoded object %v: want n0000 without managedFields", objs[0].Object["metadata"])
	}
}
