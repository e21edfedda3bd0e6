// Package jsontag is the one set of rules by which slipway reads a struct's fields as JSON
// keys, for the reflective walkers that stand in for a conversion they skip: plan's
// comparisons of typed objects (runtime's DefaultUnstructuredConverter) and kube's map of a
// typed object (encoding/json). The two readers agree on a tag's name and options, on
// omitempty and omitzero, and on inlined structs; Fields holds the few places where they part
// (Reader). It is pure: reflection only, no client-go.
package jsontag

import (
	"reflect"
	"strings"
	"sync"

	"sigs.k8s.io/structured-merge-diff/v6/value"
)

// Reader is whose rules a struct's fields are read by.
type Reader uint8

const (
	// Converter is runtime's DefaultUnstructuredConverter (its fieldInfoFromField).
	Converter Reader = iota
	// JSON is encoding/json (its typeFields, one level deep).
	JSON
)

// Field is what a reader takes of a struct field.
type Field struct {
	Name      string // the key; "" when the field is inlined
	Skip      bool   // never a key: tagged "-" (or, for JSON, unexported)
	Inline    bool   // an embedded struct whose keys join its parent's
	OmitEmpty bool
	OmitZero  func(reflect.Value) bool // nil without omitzero
	Unknown   bool                     // a rule not mirrored here: the walker proves nothing
}

// Omitted reports whether the field, of value fv, is left out for omitempty or omitzero.
func (f Field) Omitted(fv reflect.Value) bool {
	return (f.OmitEmpty && OmitEmpty(fv)) || (f.OmitZero != nil && f.OmitZero(fv))
}

// OmitEmpty is the test for omitempty of runtime's converter (its isEmpty) and of encoding/json
// alike: a struct never is empty.
func OmitEmpty(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Array, reflect.String:
		return v.Len() == 0
	case reflect.Bool:
		return !v.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return v.Int() == 0
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return v.Uint() == 0
	case reflect.Float32, reflect.Float64:
		return v.Float() == 0
	case reflect.Map, reflect.Slice:
		return v.IsNil() || v.Len() == 0
	case reflect.Pointer, reflect.Interface:
		return v.IsNil()
	}
	return false
}

// Inlined is what an inlined field fv adds to its struct's map: nothing (some false) for a nil
// pointer, else the value pointed to.
func Inlined(fv reflect.Value) (v reflect.Value, some bool) {
	if fv.Kind() == reflect.Pointer {
		if fv.IsNil() {
			return fv, false
		}
		return fv.Elem(), true
	}
	return fv, true
}

type cacheKey struct {
	t reflect.Type
	r Reader
}

var cache sync.Map // cacheKey → []Field

// Fields reads the fields of struct type t as r does, once per type. Both readers take the
// tag's name, else the Go name; omitempty; and omitzero by the type's IsZero where it has one
// (value.OmitZeroFunc, which is encoding/json's rule). Where they part:
//   - an embedded field without a name is inlined by the converter whatever its type, by
//     encoding/json only when it is a struct or a pointer to one;
//   - an unexported field is skipped by encoding/json; the converter would read it, which no
//     API type asks: unknown;
//   - ",embed" (converter) and ",string" (JSON) are not mirrored: unknown;
//   - encoding/json takes an invalid tag name as the Go name: unknown.
func Fields(t reflect.Type, r Reader) []Field {
	key := cacheKey{t, r}
	if fs, ok := cache.Load(key); ok {
		return fs.([]Field)
	}
	fs := make([]Field, t.NumField())
	for i := range fs {
		fs[i] = read(t.Field(i), r)
	}
	cache.Store(key, fs)
	return fs
}

// read is Fields for one struct field.
func read(sf reflect.StructField, r Reader) (f Field) {
	tag := sf.Tag.Get("json")
	if tag == "-" && r == JSON {
		return Field{Skip: true}
	}
	name, opts, _ := strings.Cut(tag, ",")
	for _, o := range strings.Split(opts, ",") {
		switch o {
		case "omitempty":
			f.OmitEmpty = true
		case "omitzero":
			f.OmitZero = value.OmitZeroFunc(sf.Type)
		case "embed":
			f.Unknown = f.Unknown || r == Converter
		case "string":
			f.Unknown = f.Unknown || r == JSON
		}
	}
	if r == Converter {
		f.Name, f.Skip = name, name == "-"
		if name == "" && !sf.Anonymous {
			f.Name = sf.Name
		}
		if !sf.IsExported() && !sf.Anonymous {
			f.Unknown = true // neither the converter nor encoding/json reads it alike: no API type has one
		}
		f.Inline = f.Name == ""
		return f
	}
	ft := sf.Type
	if ft.Kind() == reflect.Pointer {
		ft = ft.Elem()
	}
	switch {
	case sf.Anonymous && name == "" && ft.Kind() == reflect.Struct:
		f.Inline = true
		if !sf.IsExported() && sf.Type.Kind() == reflect.Pointer {
			f.Unknown = true // encoding/json skips these: no API type has one
		}
	case !sf.IsExported():
		return Field{Skip: true}
	case name == "":
		f.Name = sf.Name
	default:
		f.Name = name
		if !validName(name) {
			f.Unknown = true // encoding/json falls back to the Go name
		}
	}
	return f
}

var ambiguousCache sync.Map // reflect.Type → bool

// Ambiguous reports whether struct type t has two fields of one name as encoding/json reads
// it, its inlined structs' among them, which encoding/json resolves by depth and tags.
func Ambiguous(t reflect.Type) bool {
	if a, ok := ambiguousCache.Load(t); ok {
		return a.(bool)
	}
	seen := map[string]bool{}
	var dup func(t reflect.Type, depth int) bool
	dup = func(t reflect.Type, depth int) bool {
		if depth > 8 {
			return true // inlined that deep: not an API type
		}
		for i, f := range Fields(t, JSON) {
			switch {
			case f.Skip:
			case f.Inline:
				ft := t.Field(i).Type
				if ft.Kind() == reflect.Pointer {
					ft = ft.Elem()
				}
				if dup(ft, depth+1) {
					return true
				}
			case seen[f.Name]:
				return true
			default:
				seen[f.Name] = true
			}
		}
		return false
	}
	a := dup(t, 0)
	ambiguousCache.Store(t, a)
	return a
}

// validName is encoding/json's isValidTag.
func validName(s string) bool {
	for _, c := range s {
		switch {
		case strings.ContainsRune("!#$%&()*+-./:;<=>?@[]^_{|}~ ", c):
		case !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c > 127):
			return false
		}
	}
	return true
}
