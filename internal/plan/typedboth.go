package plan

import (
	"encoding"
	"encoding/json"
	"math"
	"reflect"
	"strconv"
	"sync"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"slipway.dev/slipway/internal/jsontag"
)

// SubsetBothTyped reports whether Subset(u, j) holds, where u is the unstructured form of the
// typed object want (as runtime's DefaultUnstructuredConverter converts it) and j the JSON
// round trip of have, a typed object of the same type as it came from the API server (a
// LIST decodes built-in kinds into the client's types). Neither map is built: a no-op plan of
// 1,000 nodes turned 5,000 live objects into maps only to find each one unchanged (issue 17).
// The two are walked side by side; where a rule of the converter or of encoding/json is not
// mirrored here, or have lacks what want has, the answer is false: false never claims a
// change, it sends the object the way of the full comparison.
func SubsetBothTyped(want, have any) (same bool) {
	defer func() {
		// A value reflection cannot read proves nothing.
		if recover() != nil {
			same = false
		}
	}()
	w, h := reflect.ValueOf(want), reflect.ValueOf(have)
	if w.Kind() != reflect.Pointer || w.Type() != h.Type() || w.IsNil() || h.IsNil() || w.Elem().Kind() != reflect.Struct {
		return false
	}
	return bothStruct(w.Elem(), h.Elem())
}

// bothValue is Subset(convert(w), json(h)) for h present in the JSON (null included); c is
// how their type converts (conversionOf), asked once per field or per list.
func bothValue(w, h reflect.Value, c conversion) bool {
	switch c {
	case convertsKnown:
		return bothConverted(w, h)
	case convertsUnknown:
		return false
	}
	if scalarKind(w.Kind()) {
		return sameRaw(w, h)
	}
	switch w.Kind() {
	case reflect.Pointer:
		if w.IsNil() {
			return true // converted to nil, which Subset takes as anything
		}
		if h.IsNil() {
			return false
		}
		return bothValue(w.Elem(), h.Elem(), conversionOf(w.Type().Elem()))
	case reflect.Interface:
		return w.IsNil()
	case reflect.Map:
		return bothMap(w, h)
	case reflect.Slice:
		return bothSlice(w, h)
	case reflect.Struct:
		return bothStruct(w, h)
	}
	return false
}

func bothMap(w, h reflect.Value) bool {
	if w.Len() == 0 {
		return true // nil or {}: Subset of anything, null included
	}
	if w.Type().Key().Kind() != reflect.String || h.IsNil() {
		return false
	}
	c := conversionOf(w.Type().Elem())
	it := w.MapRange()
	for it.Next() {
		hv := h.MapIndex(it.Key())
		if !hv.IsValid() {
			if !isEmptyTyped(it.Value()) {
				return false
			}
			continue
		}
		if !bothValue(it.Value(), hv, c) {
			return false
		}
	}
	return true
}

func bothSlice(w, h reflect.Value) bool {
	if w.Len() == 0 {
		return true // nil or []: Subset of anything, null included
	}
	if w.Type().Elem().Kind() == reflect.Uint8 || w.Len() != h.Len() {
		return false // bytes become base64 text: not a field of what slipway renders
	}
	c := conversionOf(w.Type().Elem())
	for i := range w.Len() {
		if !bothValue(w.Index(i), h.Index(i), c) {
			return false
		}
	}
	return true
}

// bothStruct compares the keys w converts to with those h marshals to: a key h leaves out
// (omitempty, omitzero) is absent, as in the round trip's map.
func bothStruct(w, h reflect.Value) bool {
	for i, f := range fieldsOf(w.Type()) {
		wf, hf := w.Field(i), h.Field(i)
		switch {
		case f.Unknown:
			return false
		case f.Skip || f.Omitted(wf):
		case f.Inline:
			win, wsome := jsontag.Inlined(wf)
			hin, hsome := jsontag.Inlined(hf)
			if !wsome {
				continue
			}
			if !hsome || win.Kind() != reflect.Struct || !bothStruct(win, hin) {
				return false
			}
		case f.Omitted(hf):
			// absent from have's map: Subset asks want's value to be empty
			if scalarKind(wf.Kind()) {
				if f.conv != convertsNot || wf.Kind() != reflect.String || wf.Len() != 0 {
					return false
				}
				continue
			}
			if !(f.Name == "creationTimestamp" && zeroTime(wf)) && !isEmptyTyped(wf) {
				return false
			}
		case scalarKind(wf.Kind()):
			// The converter takes a scalar field as it is, whatever its type's conversion;
			// encoding/json would marshal have's by it: only a plain one compares raw.
			if f.conv != convertsNot || !sameRaw(wf, hf) {
				return false
			}
		case f.Name == "creationTimestamp" && zeroTime(wf):
		default:
			if !bothValue(wf, hf, f.conv) {
				return false
			}
		}
	}
	return true
}

// zeroTime is isNil for the metadata's creation time: a zero Time converts to nil.
func zeroTime(v reflect.Value) bool {
	if v.Type() == timeType {
		t := valueAs[metav1.Time](v)
		return t.IsZero()
	}
	return isNil(v)
}

// sameRaw is Subset of two scalars of one type as the converter and the round trip hold them.
func sameRaw(w, h reflect.Value) bool {
	switch w.Kind() {
	case reflect.String:
		// Marshal replaces what is not UTF-8, which the converter keeps
		return w.String() == h.String() && utf8.ValidString(w.String())
	case reflect.Bool:
		return w.Bool() == h.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return w.Int() == h.Int()
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return w.Uint() == h.Uint() && w.Uint() <= math.MaxInt64
	}
	return false // floats: the round trip may not give back what was sent
}

// bothConverted compares two values of a type that converts itself, for the types whose
// unstructured form is the one their JSON decodes to (times, quantities, int-or-strings,
// durations): Subset(convert(w), convert(h)), reckoned from the values without converting
// them (the converter marshals some of them to JSON and reads it back).
func bothConverted(w, h reflect.Value) bool {
	switch w.Type() {
	case timeType: // RFC 3339 in UTC, to the second; null when zero
		a, b := valueAs[metav1.Time](w), valueAs[metav1.Time](h)
		return a.IsZero() || (!b.IsZero() && a.Unix() == b.Unix())
	case quantityType: // its canonical text
		a, b := valueAs[resource.Quantity](w), valueAs[resource.Quantity](h)
		return a.String() == b.String()
	case intOrStringType: // an integer or a string, compared as text when one of each
		a, b := valueAs[intstr.IntOrString](w), valueAs[intstr.IntOrString](h)
		return intOrStringText(a) == intOrStringText(b)
	case durationType:
		return valueAs[metav1.Duration](w).Duration == valueAs[metav1.Duration](h).Duration
	}
	cw, ok, known := converted(w)
	if !ok || !known {
		return false
	}
	if cw == nil {
		return true
	}
	ch, ok, known := converted(h)
	return ok && known && Subset(cw, ch)
}

// intOrStringText is what Subset's scalar comparison makes of an IntOrString's conversion.
func intOrStringText(v intstr.IntOrString) string {
	if v.Type == intstr.Int {
		return strconv.FormatInt(int64(v.IntVal), 10)
	}
	return v.StrVal
}

// valueAs is v's value as a T, without the copy Interface makes where v is addressable.
func valueAs[T any](v reflect.Value) T {
	if v.CanAddr() {
		return *(*T)(v.Addr().UnsafePointer())
	}
	return v.Interface().(T)
}

var (
	timeType        = reflect.TypeFor[metav1.Time]()
	quantityType    = reflect.TypeFor[resource.Quantity]()
	intOrStringType = reflect.TypeFor[intstr.IntOrString]()
	durationType    = reflect.TypeFor[metav1.Duration]()
)

type conversion uint8

const (
	convertsNot     conversion = iota // taken field by field, or as a plain scalar
	convertsKnown                     // converts itself to what its JSON decodes to
	convertsUnknown                   // converts or marshals itself otherwise: not compared here
)

// knownConversions are the types that convert themselves whose converted form and decoded
// JSON are one: Time and MicroTime as RFC 3339 text in UTC (null when zero), Duration and
// Quantity as their canonical text, IntOrString as an integer or a string.
var knownConversions = map[reflect.Type]bool{
	timeType:                            true,
	reflect.TypeFor[metav1.MicroTime](): true,
	durationType:                        true,
	quantityType:                        true,
	intOrStringType:                     true,
}

var conversions sync.Map // reflect.Type → conversion

// conversionOf says how the converter and encoding/json take a value of type t.
func conversionOf(t reflect.Type) (c conversion) {
	if c, ok := conversions.Load(t); ok {
		return c.(conversion)
	}
	defer func() {
		if recover() != nil {
			c = convertsUnknown
		}
		conversions.Store(t, c)
	}()
	pt := reflect.PointerTo(t)
	switch {
	case t.Kind() == reflect.Pointer:
		// nil is null to both; a pointer to a value converts as the value (bothValue)
	case knownConversions[t]:
		c = convertsKnown
	case t.Implements(marshalerType), pt.Implements(marshalerType),
		t.Implements(textMarshalerType), pt.Implements(textMarshalerType):
		c = convertsUnknown
	default:
		if _, ok, _ := converted(reflect.New(t).Elem()); ok {
			c = convertsUnknown
		}
	}
	return c
}

var (
	marshalerType     = reflect.TypeFor[json.Marshaler]()
	textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()
)
