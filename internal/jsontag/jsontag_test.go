package jsontag

import (
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"
)

type inner struct{ A string }

type notStruct string

type zeroer struct{ n int }

func (z zeroer) IsZero() bool { return z.n == 0 }

// sample has a field for each rule where the two readers agree and where they part.
type sample struct {
	Plain    string
	Named    string `json:"named,omitempty"`
	Skipped  string `json:"-"`
	Dash     string `json:"-,"`
	Zero     zeroer `json:"zero,omitzero"`
	Quoted   int    `json:"quoted,string"`
	Embedded string `json:"emb,embed"`
	Bad      string `json:"a\"b"`
	inner
	notStruct
	hidden string
}

func TestFields(t *testing.T) {
	type row struct {
		Name                             string
		Skip, Inline, OmitEmpty, Unknown bool
		OmitZero                         bool
	}
	rows := func(fs []Field) []row {
		var out []row
		for _, f := range fs {
			out = append(out, row{f.Name, f.Skip, f.Inline, f.OmitEmpty, f.Unknown, f.OmitZero != nil})
		}
		return out
	}
	typ := reflect.TypeFor[sample]()
	tests := []struct {
		reader Reader
		want   []row
	}{
		{Converter, []row{
			{Name: "Plain"},
			{Name: "named", OmitEmpty: true},
			{Name: "-", Skip: true},
			{Name: "-", Skip: true}, // the converter skips "-" whatever follows
			{Name: "zero", OmitZero: true},
			{Name: "quoted"},
			{Name: "emb", Unknown: true},
			{Name: "a\"b"},
			{Inline: true},
			{Inline: true},                  // inlined whatever its type
			{Name: "hidden", Unknown: true}, // unexported: not mirrored
		}},
		{JSON, []row{
			{Name: "Plain"},
			{Name: "named", OmitEmpty: true},
			{Skip: true},
			{Name: "-"}, // encoding/json's key "-"
			{Name: "zero", OmitZero: true},
			{Name: "quoted", Unknown: true},
			{Name: "emb"},
			{Name: "a\"b", Unknown: true}, // not a valid tag: encoding/json takes the Go name
			{Inline: true},
			{Skip: true}, // unexported and not a struct
			{Skip: true},
		}},
	}
	for _, tt := range tests {
		t.Run([]string{"converter", "json"}[tt.reader], func(t *testing.T) {
			if diff := cmp.Diff(tt.want, rows(Fields(typ, tt.reader))); diff != "" {
				t.Errorf("Fields (-want +got):\n%s", diff)
			}
		})
	}
}

func TestOmitted(t *testing.T) {
	fs := Fields(reflect.TypeFor[sample](), JSON)
	v := reflect.ValueOf(&sample{Zero: zeroer{n: 1}}).Elem()
	if !fs[1].Omitted(v.Field(1)) {
		t.Error("an empty string with omitempty: not omitted")
	}
	if fs[4].Omitted(v.Field(4)) {
		t.Error("a value whose IsZero says false, with omitzero: omitted")
	}
	if !fs[4].Omitted(reflect.ValueOf(sample{}).Field(4)) {
		t.Error("an unaddressable zero value with omitzero: not omitted")
	}
}

func TestAmbiguous(t *testing.T) {
	type twice struct {
		inner
		A string
	}
	if !Ambiguous(reflect.TypeFor[twice]()) {
		t.Error("a field named as an inlined one's: not ambiguous")
	}
	if Ambiguous(reflect.TypeFor[sample]()) {
		t.Error("sample: ambiguous")
	}
}
