package kube

import (
	"reflect"
	"strings"
	"sync"

	"slipway.dev/slipway/internal/plan"
)

// What jsonMap reads of a struct type, once per type: encoding/json's rules for its fields.

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
	if f.omitempty && plan.OmitEmpty(fv) {
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
