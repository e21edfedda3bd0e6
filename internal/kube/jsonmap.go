package kube

import (
	"encoding"
	"encoding/base64"
	"encoding/json"
	"math"
	"reflect"
	"sync"
	"unicode/utf8"

	utiljson "k8s.io/apimachinery/pkg/util/json"

	"slipway.dev/slipway/internal/jsontag"
)

// jsonMap is utiljson.Unmarshal(json.Marshal(obj)) for obj, a pointer to an API struct, built
// by one reflection walk instead of writing and reading JSON: the items of a 1,000-node group's
// LISTs (issue 17). Its maps and slices are made at the size they end at, as the decoder
// makes them; runtime's converter sizes every map for all the fields of its struct, which cost
// a 1,000-node plan 10 MB more at its peak. ok is false where the walk meets what it does not
// mirror of encoding/json (a float, a string that is not UTF-8, a ",string" tag, two fields of
// one name, a text marshaller): the caller then takes the JSON round trip, so what it returns
// is always that round trip's result (TestJSONMapIsTheJSONRoundTrip).
func jsonMap(obj any) (m map[string]any, ok bool) {
	defer func() {
		if recover() != nil {
			m, ok = nil, false
		}
	}()
	v := reflect.ValueOf(obj)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return nil, false
	}
	w := walkers.Get().(*jsonWalker)
	defer walkers.Put(w)
	w.ok = true
	out := w.value(v.Elem())
	m, isMap := out.(map[string]any)
	return m, w.ok && isMap
}

// jsonWalker holds a walk's verdict and, as a stack, the keys of the structs it is in: a
// struct's keys are gathered first, so that its map is made at its size with each field's
// omission decided once.
type jsonWalker struct {
	ok bool
	kv []keyValue
}

// walkers keep their stacks from one item of a LIST to the next.
var walkers = sync.Pool{New: func() any { return &jsonWalker{} }}

type keyValue struct {
	k string
	v any
}

var (
	marshalerType     = reflect.TypeFor[json.Marshaler]()
	textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()
)

// value is what the round trip makes of v.
func (w *jsonWalker) value(v reflect.Value) any {
	if !w.ok {
		return nil
	}
	if m, ok := w.marshalled(v); ok {
		return m
	}
	switch v.Kind() {
	case reflect.String:
		s := v.String()
		if !utf8.ValidString(s) {
			w.ok = false // Marshal replaces what is not UTF-8
		}
		return s
	case reflect.Bool:
		return v.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return v.Int()
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		u := v.Uint()
		if u > math.MaxInt64 {
			w.ok = false
		}
		return int64(u)
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return nil
		}
		return w.value(v.Elem())
	case reflect.Map:
		return w.mapValue(v)
	case reflect.Slice:
		if v.IsNil() {
			return nil
		}
		if el := reflect.PointerTo(v.Type().Elem()); v.Type().Elem().Kind() == reflect.Uint8 &&
			!el.Implements(marshalerType) && !el.Implements(textMarshalerType) {
			return base64.StdEncoding.EncodeToString(v.Bytes())
		}
		return w.list(v)
	case reflect.Array:
		return w.list(v)
	case reflect.Struct:
		return w.structValue(v)
	}
	w.ok = false // floats, complex numbers, channels, functions
	return nil
}

// How a type marshals itself, as encoding/json looks for it.
const (
	marshalsNot   = iota
	marshalsValue // json.Marshaler on the value (or the pointer, for a pointer type)
	marshalsAddr  // json.Marshaler on the pointer to an addressable value
	marshalsText  // encoding.TextMarshaler: not mirrored
)

var marshalCache sync.Map // reflect.Type → int

func marshalKind(t reflect.Type) int {
	if k, ok := marshalCache.Load(t); ok {
		return k.(int)
	}
	k := marshalsNot
	switch {
	case t.Implements(marshalerType):
		k = marshalsValue
	case t.Kind() != reflect.Pointer && reflect.PointerTo(t).Implements(marshalerType):
		k = marshalsAddr
	case t.Implements(textMarshalerType) || (t.Kind() != reflect.Pointer && reflect.PointerTo(t).Implements(textMarshalerType)):
		k = marshalsText
	}
	marshalCache.Store(t, k)
	return k
}

// marshalled is the round trip of a value whose type marshals itself (metav1.Time,
// resource.Quantity, intstr.IntOrString, runtime.RawExtension), as encoding/json calls it.
func (w *jsonWalker) marshalled(v reflect.Value) (any, bool) {
	var m json.Marshaler
	switch marshalKind(v.Type()) {
	case marshalsNot:
		return nil, false
	case marshalsValue:
		if (v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface) && v.IsNil() {
			return nil, true
		}
		m = v.Interface().(json.Marshaler)
	case marshalsAddr:
		if !v.CanAddr() {
			return nil, false // encoding/json, too, marshals such a value as its fields
		}
		m = v.Addr().Interface().(json.Marshaler)
	default:
		w.ok = false
		return nil, true
	}
	data, err := m.MarshalJSON()
	if err != nil {
		w.ok = false
		return nil, true
	}
	var out any
	if err := utiljson.Unmarshal(data, &out); err != nil {
		w.ok = false
		return nil, true
	}
	return out, true
}

func (w *jsonWalker) mapValue(v reflect.Value) any {
	if v.IsNil() {
		return nil
	}
	if v.Type().Key().Kind() != reflect.String || v.Type().Key().Implements(textMarshalerType) {
		w.ok = false // keys written as numbers or by a marshaller
		return nil
	}
	out := make(map[string]any, v.Len())
	it := v.MapRange()
	for it.Next() {
		k := it.Key().String()
		if !utf8.ValidString(k) {
			w.ok = false
		}
		out[k] = w.value(it.Value())
	}
	return out
}

func (w *jsonWalker) list(v reflect.Value) []any {
	out := make([]any, v.Len())
	for i := range out {
		out[i] = w.value(v.Index(i))
	}
	return out
}

// structValue is the map of struct v.
func (w *jsonWalker) structValue(v reflect.Value) map[string]any {
	start := len(w.kv)
	w.fields(v)
	var out map[string]any
	if w.ok {
		out = make(map[string]any, len(w.kv)-start)
		for _, p := range w.kv[start:] {
			out[p.k] = p.v
		}
	}
	clear(w.kv[start:])
	w.kv = w.kv[:start]
	return out
}

// fields pushes the keys of struct v, those of its inlined structs among them. A field's
// value is walked before its key is pushed: the walk of a struct leaves the stack as it was.
func (w *jsonWalker) fields(v reflect.Value) {
	if jsontag.Ambiguous(v.Type()) {
		w.ok = false // encoding/json's rules of dominance: not mirrored
		return
	}
	for i, f := range jsontag.Fields(v.Type(), jsontag.JSON) {
		fv := v.Field(i)
		switch {
		case f.Unknown:
			w.ok = false
			return
		case f.Skip || f.Omitted(fv):
		case f.Inline:
			if in, some := jsontag.Inlined(fv); some {
				w.fields(in)
			}
		default:
			val := w.value(fv)
			w.kv = append(w.kv, keyValue{f.Name, val})
		}
	}
}
