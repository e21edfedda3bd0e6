package kube

import (
	"encoding"
	"encoding/base64"
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"sync"
	"unicode/utf8"

	utiljson "k8s.io/apimachinery/pkg/util/json"
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
	w := jsonWalker{ok: true}
	out := w.value(v.Elem())
	m, isMap := out.(map[string]any)
	return m, w.ok && isMap
}

type jsonWalker struct{ ok bool }

var (
	marshalerType     = reflect.TypeFor[json.Marshaler]()
	textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()
	zeroerType        = reflect.TypeFor[interface{ IsZero() bool }]()
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
		out := make(map[string]any, w.count(v))
		w.fields(v, out)
		return out
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

// count is the number of keys struct v writes.
func (w *jsonWalker) count(v reflect.Value) int {
	n := 0
	for i, f := range jsonFieldsOf(v.Type()) {
		fv := v.Field(i)
		switch {
		case f.skip || f.omitted(fv):
		case f.inline:
			if in, some := inlinedStruct(fv); some {
				n += w.count(in)
			}
		default:
			n++
		}
	}
	return n
}

// fields writes the keys of struct v into out, those of its inlined structs among them.
func (w *jsonWalker) fields(v reflect.Value, out map[string]any) {
	if ambiguous(v.Type()) {
		w.ok = false // encoding/json's rules of dominance: not mirrored
		return
	}
	for i, f := range jsonFieldsOf(v.Type()) {
		fv := v.Field(i)
		switch {
		case f.unknown:
			w.ok = false
			return
		case f.skip || f.omitted(fv):
		case f.inline:
			if in, some := inlinedStruct(fv); some {
				w.fields(in, out)
			}
		default:
			out[f.name] = w.value(fv)
		}
	}
}

// inlinedStruct is the struct an embedded field adds its keys from: none for a nil pointer.
func inlinedStruct(fv reflect.Value) (reflect.Value, bool) {
	if fv.Kind() == reflect.Pointer {
		if fv.IsNil() {
			return fv, false
		}
		fv = fv.Elem()
	}
	return fv, true
}

// jsonField is what encoding/json reads of a struct field.
type jsonField struct {
	name      string
	skip      bool // unexported, or tagged "-"
	inline    bool // an embedded struct without a name of its own
	omitempty bool
	omitzero  int  // 0: no omitzero; else how IsZero is asked (zeroBy…)
	unknown   bool // a rule not mirrored here
}

// How omitzero asks a field whether it is zero, as encoding/json does.
const (
	zeroByValue  = 1 + iota // reflect's IsZero
	zeroByMethod            // the type's IsZero
	zeroByAddr              // the pointer's IsZero, the field being addressable
)

func (f jsonField) omitted(fv reflect.Value) bool {
	if f.omitempty && emptyJSON(fv) {
		return true
	}
	switch f.omitzero {
	case 0:
		return false
	case zeroByMethod:
		if (fv.Kind() == reflect.Pointer || fv.Kind() == reflect.Interface) && fv.IsNil() {
			return true
		}
		return fv.Interface().(interface{ IsZero() bool }).IsZero()
	case zeroByAddr:
		if fv.CanAddr() {
			return fv.Addr().Interface().(interface{ IsZero() bool }).IsZero()
		}
	}
	return fv.IsZero()
}

// emptyJSON is encoding/json's test for omitempty.
func emptyJSON(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() == 0
	case reflect.Bool:
		return !v.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return v.Int() == 0
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return v.Uint() == 0
	case reflect.Float32, reflect.Float64:
		return v.Float() == 0
	case reflect.Pointer, reflect.Interface:
		return v.IsNil()
	}
	return false
}

var jsonFieldCache sync.Map // reflect.Type → []jsonField

// jsonFieldsOf reads struct type t's fields as encoding/json's typeFields does, one level deep.
func jsonFieldsOf(t reflect.Type) []jsonField {
	if fs, ok := jsonFieldCache.Load(t); ok {
		return fs.([]jsonField)
	}
	fs := make([]jsonField, t.NumField())
	for i := range fs {
		sf, f := t.Field(i), &fs[i]
		tag := sf.Tag.Get("json")
		if tag == "-" {
			f.skip = true
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		for _, o := range strings.Split(opts, ",") {
			switch o {
			case "omitempty":
				f.omitempty = true
			case "omitzero":
				switch t := sf.Type; {
				case t.Implements(zeroerType):
					f.omitzero = zeroByMethod
				case t.Kind() != reflect.Pointer && reflect.PointerTo(t).Implements(zeroerType):
					f.omitzero = zeroByAddr
				default:
					f.omitzero = zeroByValue
				}
			case "string":
				f.unknown = true
			}
		}
		ft := sf.Type
		if ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		switch {
		case sf.Anonymous && name == "" && ft.Kind() == reflect.Struct:
			f.inline = true
			if !sf.IsExported() && sf.Type.Kind() == reflect.Pointer {
				f.unknown = true // encoding/json skips these: no API type has one
			}
		case !sf.IsExported():
			f.skip = true
		case name == "":
			f.name = sf.Name
		default:
			f.name = name
		}
		if !f.skip && !f.unknown && name != "" && !validJSONName(name) {
			f.unknown = true // encoding/json falls back to the Go name
		}
	}
	jsonFieldCache.Store(t, fs)
	return fs
}

var ambiguousCache sync.Map // reflect.Type → bool

// ambiguous reports whether struct type t has two fields of one name, its inlined structs'
// among them, which encoding/json resolves by depth and tags.
func ambiguous(t reflect.Type) bool {
	if a, ok := ambiguousCache.Load(t); ok {
		return a.(bool)
	}
	seen := map[string]bool{}
	var dup func(t reflect.Type, depth int) bool
	dup = func(t reflect.Type, depth int) bool {
		if depth > 8 {
			return true // inlined that deep: not an API type
		}
		for i, f := range jsonFieldsOf(t) {
			switch {
			case f.skip:
			case f.inline:
				ft := t.Field(i).Type
				if ft.Kind() == reflect.Pointer {
					ft = ft.Elem()
				}
				if dup(ft, depth+1) {
					return true
				}
			case seen[f.name]:
				return true
			default:
				seen[f.name] = true
			}
		}
		return false
	}
	a := dup(t, 0)
	ambiguousCache.Store(t, a)
	return a
}

// validJSONName is encoding/json's isValidTag.
func validJSONName(s string) bool {
	for _, c := range s {
		switch {
		case strings.ContainsRune("!#$%&()*+-./:;<=>?@[]^_{|}~ ", c):
		case !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c > 127):
			return false
		}
	}
	return true
}
