package plan

import (
	"math"
	"reflect"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/structured-merge-diff/v6/value"

	"slipway.dev/slipway/internal/jsontag"
)

// SubsetTyped reports whether Subset(u, have) holds for u, the unstructured form of the typed
// object want (a pointer to a struct, as runtime's DefaultUnstructuredConverter converts it),
// without building u: a no-op plan of 1,000 nodes converted 5,000 rendered objects only to find
// each one unchanged (issue 17). It walks want by reflection under the converter's rules (json
// names, omitempty and omitzero, inlined structs, the types that convert themselves) beside
// have. Where a rule is not mirrored here it answers false, which sends the object the way of
// the full comparison: false never claims a change, it only declines to prove none.
func SubsetTyped(want any, have map[string]any) (same bool) {
	defer func() {
		// A value reflection cannot read (a field of a type no API object has) proves nothing.
		if recover() != nil {
			same = false
		}
	}()
	if u, ok := want.(*unstructured.Unstructured); ok {
		return Subset(u.Object, have)
	}
	v := reflect.ValueOf(want)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return false
	}
	return typedSubset(v.Elem(), have)
}

// typedSubset is Subset(convert(sv), have).
func typedSubset(sv reflect.Value, have any) bool {
	if conv, ok, known := converted(sv); ok {
		return known && Subset(conv, have)
	}
	if scalarKind(sv.Kind()) {
		return rawScalarSubset(sv, have)
	}
	switch sv.Kind() {
	case reflect.Pointer, reflect.Interface:
		return sv.IsNil() || typedSubset(sv.Elem(), have)
	case reflect.Map:
		return mapSubset(sv, have)
	case reflect.Slice:
		return sliceSubset(sv, have)
	case reflect.Struct:
		h, ok := have.(map[string]any)
		if !ok {
			return have == nil && !emits(sv)
		}
		return structSubset(sv, h)
	}
	return false
}

func mapSubset(sv reflect.Value, have any) bool {
	if sv.IsNil() {
		return true // converted to nil, which Subset takes as anything
	}
	if sv.Type().Key().Kind() != reflect.String {
		return false
	}
	h, ok := have.(map[string]any)
	if !ok {
		return sv.Len() == 0 && have == nil
	}
	it := sv.MapRange()
	for it.Next() {
		if !fieldSubset(it.Key().String(), it.Value(), h, false) {
			return false
		}
	}
	return true
}

func sliceSubset(sv reflect.Value, have any) bool {
	if sv.IsNil() {
		return true
	}
	if sv.Type().Elem().Kind() == reflect.Uint8 {
		return false // bytes become base64 text: not a field of what slipway renders
	}
	h, ok := have.([]any)
	if !ok {
		return sv.Len() == 0 && have == nil
	}
	if sv.Len() != len(h) {
		return false
	}
	for i := range h {
		if !typedSubset(sv.Index(i), h[i]) {
			return false
		}
	}
	return true
}

// structSubset compares the fields sv converts to (inlined ones in the same map) with h.
func structSubset(sv reflect.Value, h map[string]any) bool {
	for i, f := range fieldsOf(sv.Type()) {
		fv := sv.Field(i)
		switch {
		case f.Unknown:
			return false
		case f.Skip || f.Omitted(fv):
		case f.Inline:
			if in, some := jsontag.Inlined(fv); some && (in.Kind() != reflect.Struct || !structSubset(in, h)) {
				return false
			}
		default:
			if !fieldSubset(f.Name, fv, h, true) {
				return false
			}
		}
	}
	return true
}

// fieldSubset is Subset's step for one key of a map: the field named k, of value fv. A struct
// field of a scalar kind (field) is taken as it is, whatever its type's own conversion: the
// converter's structToUnstructured does so.
func fieldSubset(k string, fv reflect.Value, h map[string]any, field bool) bool {
	if field && scalarKind(fv.Kind()) {
		hv, present := h[k]
		if !present {
			return fv.Kind() == reflect.String && fv.Len() == 0
		}
		return rawScalarSubset(fv, hv)
	}
	if k == "creationTimestamp" && isNil(fv) {
		return true
	}
	hv, present := h[k]
	if !present {
		return isEmptyTyped(fv)
	}
	return typedSubset(fv, hv)
}

func scalarKind(k reflect.Kind) bool {
	switch k {
	case reflect.String, reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		return true
	}
	return false
}

// rawScalarSubset is Subset(fv as the converter stores a scalar field, have).
func rawScalarSubset(fv reflect.Value, have any) bool {
	switch fv.Kind() {
	case reflect.String:
		return sameScalar(fv.String(), have)
	case reflect.Bool:
		return sameScalar(fv.Bool(), have)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return sameScalar(fv.Int(), have)
	case reflect.Float32, reflect.Float64:
		return sameScalar(fv.Float(), have)
	}
	if u := fv.Uint(); u <= math.MaxInt64 {
		return sameScalar(int64(u), have)
	}
	return false
}

// converted is the value of sv when its type converts itself (metav1.Time, resource.Quantity,
// intstr.IntOrString: ToUnstructured or json.Marshaler), as the converter takes it; ok says
// the type does, known that the conversion succeeded.
func converted(sv reflect.Value) (v any, ok, known bool) {
	if !sv.IsValid() {
		return nil, false, false
	}
	entry := value.TypeReflectEntryOf(sv.Type())
	if !entry.CanConvertToUnstructured() {
		return nil, false, false
	}
	u, err := entry.ToUnstructured(sv)
	if err != nil {
		return nil, true, false
	}
	return u, true, true
}

// isNil reports whether sv converts to nil.
func isNil(sv reflect.Value) bool {
	if conv, ok, known := converted(sv); ok {
		return known && conv == nil
	}
	switch sv.Kind() {
	case reflect.Pointer, reflect.Interface, reflect.Map, reflect.Slice:
		return sv.IsNil()
	}
	return false
}

// isEmptyTyped is isEmpty(convert(sv)).
func isEmptyTyped(sv reflect.Value) bool {
	if conv, ok, known := converted(sv); ok {
		return known && isEmpty(conv)
	}
	switch sv.Kind() {
	case reflect.String:
		return sv.Len() == 0
	case reflect.Pointer, reflect.Interface:
		return sv.IsNil() || isEmptyTyped(sv.Elem())
	case reflect.Map:
		return sv.IsNil() || (sv.Len() == 0 && sv.Type().Key().Kind() == reflect.String)
	case reflect.Slice:
		return sv.IsNil() || sv.Len() == 0
	case reflect.Struct:
		return !emits(sv)
	}
	return false
}

// emits reports whether struct sv converts to a map with any key.
func emits(sv reflect.Value) bool {
	for i, f := range fieldsOf(sv.Type()) {
		fv := sv.Field(i)
		switch {
		case f.Unknown:
			return true // taken as a key, so that nothing is taken for empty
		case f.Skip || f.Omitted(fv):
		case f.Inline:
			if in, some := jsontag.Inlined(fv); some && (in.Kind() != reflect.Struct || emits(in)) {
				return true // not a struct: counted as a key, so that nothing is taken for empty
			}
		default:
			return true
		}
	}
	return false
}

// field is a struct field as the converter reads it (jsontag's rules) and how its type
// converts (SubsetBothTyped).
type field struct {
	jsontag.Field
	conv conversion
}

var fieldCache sync.Map // reflect.Type → []field

// fieldsOf reads the fields of struct type t as runtime's converter does, once per type.
func fieldsOf(t reflect.Type) []field {
	if fs, ok := fieldCache.Load(t); ok {
		return fs.([]field)
	}
	tags := jsontag.Fields(t, jsontag.Converter)
	fs := make([]field, len(tags))
	for i, f := range tags {
		fs[i] = field{Field: f, conv: conversionOf(t.Field(i).Type)}
	}
	fieldCache.Store(t, fs)
	return fs
}
