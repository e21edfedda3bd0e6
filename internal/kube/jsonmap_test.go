package kube

import (
	"bytes"
	"encoding/json"
	"math/rand"
	"reflect"
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/apitesting/fuzzer"
	metafuzzer "k8s.io/apimachinery/pkg/apis/meta/fuzzer"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/client-go/kubernetes/scheme"
)

// roundTrip is what listTyped made of an item before jsonMap: JSON written, then read.
func roundTrip(t *testing.T, obj any) (map[string]any, bool) {
	t.Helper()
	var buf bytes.Buffer
	if err := json.NewEncoder(&buf).Encode(obj); err != nil {
		return nil, false
	}
	var m map[string]any
	if err := utiljson.Unmarshal(buf.Bytes(), &m); err != nil {
		t.Fatalf("%T: the JSON it wrote does not read back: %v", obj, err)
	}
	return m, true
}

// Every kind of the client-go scheme, filled at random many times over (apimachinery's fuzzer,
// with the meta types' own rules), converts by jsonMap to exactly what the JSON round trip
// gives, or declines (ok false) and the round trip is taken. The kinds slipway lists decline
// rarely, so the walk is what they take.
func TestJSONMapIsTheJSONRoundTrip(t *testing.T) {
	f := fuzzer.FuzzerFor(metafuzzer.Funcs, rand.NewSource(17), serializer.NewCodecFactory(scheme.Scheme)).
		NilChance(0.3).NumElements(0, 3)
	listed := map[string]bool{"Deployment": true, "PersistentVolumeClaim": true, "ServiceAccount": true,
		"Service": true, "NetworkPolicy": true, "Secret": true, "ConfigMap": true, "PodDisruptionBudget": true}
	var kinds []string
	types := map[string]reflect.Type{}
	for gvk, typ := range scheme.Scheme.AllKnownTypes() {
		if gvk.Version == "__internal" {
			continue
		}
		k := gvk.String()
		kinds = append(kinds, k)
		types[k] = typ
	}
	sort.Strings(kinds)
	const fills = 12
	compared, declined := 0, map[string]int{}
	for _, k := range kinds {
		typ := types[k]
		n := 2 // every kind of the scheme twice; the kinds slipway lists more often
		if listed[typ.Name()] {
			n = fills
		}
		for i := range n {
			obj := reflect.New(typ).Interface()
			f.Fill(obj)
			want, marshals := roundTrip(t, obj)
			got, ok := jsonMap(obj)
			if !ok {
				declined[typ.Name()]++
				continue
			}
			if !marshals {
				t.Errorf("%s fill %d: jsonMap converted what json.Marshal refuses", k, i)
				continue
			}
			compared++
			if reflect.DeepEqual(want, got) {
				continue
			}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("%s fill %d: jsonMap differs from the JSON round trip (-want +got):\n%s", k, i, d)
			}
		}
	}
	for kind := range listed {
		if n := declined[kind]; n > fills/4 {
			t.Errorf("%s: jsonMap declined %d of %d fills: the LISTs would take the round trip", kind, n, fills)
		}
	}
	t.Logf("%d kinds, %d objects compared, declined: %v", len(kinds), compared, declined)
}
