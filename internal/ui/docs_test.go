package ui_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"slipway.dev/slipway/internal/event"
	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/status"
	"slipway.dev/slipway/internal/ui"
)

// jsonDoc is the user's description of slipway's JSON output.
const jsonDoc = "../../docs/json.md"

// TestDocsJSONExamples: the example of each JSON document in docs/json.md has exactly the keys
// slipway prints when every field is set, so a field renamed, moved, added or removed in the
// code fails here until the documentation says so too.
func TestDocsJSONExamples(t *testing.T) {
	examples := jsonExamples(t)
	tests := []struct {
		section string
		print   func(t *testing.T, w *bytes.Buffer)
	}{
		{"plan", func(t *testing.T, w *bytes.Buffer) {
			p := &plan.Plan{}
			fill(reflect.ValueOf(p).Elem())
			p.Nodes = append(p.Nodes, plan.NodePlan{Node: "", Changes: p.Nodes[0].Changes}) // the group's own
			// Replicas are printed for the steps that wait for pods.
			p.Steps.Before[0].Kind = plan.StepStartRole
			p.Steps.Nodes[0].Steps[0].Kind = plan.StepAwaitRollout
			// The lanes' payloads a step's JSON carries (plan/stepjson.go): one step of each.
			n := p.Nodes[0]
			p.Steps.Nodes[0].Steps[0].Payload = plan.MigrationRestore{Migration: *n.Migration}
			p.Steps.Nodes[0].Steps = append(p.Steps.Nodes[0].Steps,
				plan.Step{Kind: plan.StepPublishDNS, Payload: plan.DNSPublish{Records: n.Records}},
				plan.Step{Kind: plan.StepRemoveCopy, Payload: plan.CopyRemoval{StateVersion: "x"}})
			if err := ui.PlanJSON(w, p); err != nil {
				t.Fatal(err)
			}
		}},
		{"status", func(t *testing.T, w *bytes.Buffer) {
			s := &status.Group{}
			fill(reflect.ValueOf(s).Elem())
			if err := ui.StatusJSON(w, s); err != nil {
				t.Fatal(err)
			}
		}},
		{"apply events", func(t *testing.T, w *bytes.Buffer) {
			e := event.Event{}
			fill(reflect.ValueOf(&e).Elem())
			// The one image event apply emits is upload progress.
			e.Image = &event.Image{Name: "web", Kind: event.ImageProgress, Ref: "r/demo/web:c-1", Done: 1, Total: 2}
			p := ui.NewJSON(w)
			p.Event(e)
			p.Close()
		}},
	}
	for _, tt := range tests {
		t.Run(tt.section, func(t *testing.T) {
			doc, ok := examples[tt.section]
			if !ok {
				t.Fatalf("%s: no ```json example under the heading %q", jsonDoc, "## "+tt.section)
			}
			var out bytes.Buffer
			tt.print(t, &out)
			want := canonical(keyPaths(t, out.Bytes()))
			got := canonical(keyPaths(t, []byte(doc)))
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("%s, section %q: the example's keys differ from what slipway prints (-printed +documented):\n%s", jsonDoc, tt.section, d)
			}
		})
	}
}

// canonical counts the group's changes and steps as those of a node: both are the same types,
// shown once in full in the example (a Namespace change has no diff to show).
func canonical(paths []string) []string {
	out := make([]string, 0, len(paths))
	for _, p := range paths {
		if rest, ok := strings.CutPrefix(p, "groupChanges[]."); ok {
			p = "nodes[].changes[]." + rest
		}
		if rest, ok := strings.CutPrefix(p, "groupSteps[]."); ok {
			p = "nodes[].steps[]." + rest
		}
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

// jsonExamples returns the first ```json block under each "## " heading of docs/json.md.
func jsonExamples(t *testing.T) map[string]string {
	t.Helper()
	data, err := os.ReadFile(jsonDoc)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	section, body, in := "", "", false
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case in && line == "```":
			if _, seen := out[section]; !seen {
				out[section] = body
			}
			in, body = false, ""
		case in:
			body += line + "\n"
		case strings.HasPrefix(line, "## "):
			section = strings.TrimPrefix(line, "## ")
		case line == "```json":
			in = true
		}
	}
	return out
}

// keyPaths returns every key path of one JSON document, or of JSON lines: a.b, a.list[].c.
func keyPaths(t *testing.T, data []byte) []string {
	t.Helper()
	set := map[string]bool{}
	dec := json.NewDecoder(bytes.NewReader(data))
	for dec.More() {
		var v any
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("not JSON: %v\n%s", err, data)
		}
		walkKeys(v, "", set)
	}
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func walkKeys(v any, prefix string, set map[string]bool) {
	switch v := v.(type) {
	case map[string]any:
		for k, c := range v {
			p := k
			if prefix != "" {
				p = prefix + "." + k
			}
			set[p] = true
			walkKeys(c, p, set)
		}
	case []any:
		for _, c := range v {
			walkKeys(c, prefix+"[]", set)
		}
	}
}

// fill sets every exported field of v to a value that is not empty, lists and maps to one
// element, so that every omitempty field is printed.
func fill(v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		v.SetString("x")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(1)
	case reflect.Pointer:
		if v.Type().Elem().Kind() == reflect.Struct || v.Type().Elem().Kind() != reflect.Interface {
			v.Set(reflect.New(v.Type().Elem()))
			fill(v.Elem())
		}
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 1, 1)
		fill(s.Index(0))
		v.Set(s)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fill(k)
		fill(e)
		m.SetMapIndex(k, e)
		v.Set(m)
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[time.Time]() {
			v.Set(reflect.ValueOf(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)))
			return
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i))
			}
		}
	}
}
