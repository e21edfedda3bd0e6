package plan

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// ignored are the fields that differ between any two reads of one object and say nothing
// about what slipway asked for.
var ignored = []string{
	"metadata.managedFields", "metadata.resourceVersion", "metadata.generation", "metadata.uid",
	"metadata.creationTimestamp", "metadata.annotations.deployment.kubernetes.io/revision", "status",
}

// Diff lists the fields that differ between live and after (a dry-run result or the desired
// object), each as a dotted path with the old and new value.
func Diff(live, after *unstructured.Unstructured) []FieldDiff {
	a, b := map[string]string{}, map[string]string{}
	flatten("", live.Object, a)
	flatten("", after.Object, b)
	var out []FieldDiff
	for _, path := range unionKeys(a, b) {
		if skip(path) {
			continue
		}
		if a[path] != b[path] {
			out = append(out, FieldDiff{Path: path, Old: a[path], New: b[path]})
		}
	}
	return out
}

func skip(path string) bool {
	for _, ig := range ignored {
		if path == ig || strings.HasPrefix(path, ig+".") || strings.HasPrefix(path, ig+"[") {
			return true
		}
	}
	return false
}

func unionKeys(a, b map[string]string) []string {
	seen := map[string]bool{}
	var ks []string
	for _, m := range []map[string]string{a, b} {
		for k := range m {
			if !seen[k] {
				seen[k] = true
				ks = append(ks, k)
			}
		}
	}
	slices.Sort(ks)
	return ks
}

func flatten(prefix string, v any, out map[string]string) {
	switch t := v.(type) {
	case map[string]any:
		if len(t) == 0 && prefix != "" {
			return
		}
		for k, x := range t {
			p := k
			if prefix != "" {
				p = prefix + "." + k
			}
			flatten(p, x, out)
		}
	case []any:
		if len(t) == 0 {
			return
		}
		for i, x := range t {
			flatten(fmt.Sprintf("%s[%d]", prefix, i), x, out)
		}
	case nil:
	default:
		out[prefix] = scalar(t)
	}
}

func scalar(v any) string {
	switch t := v.(type) {
	case string:
		return t
	case float64:
		if t == float64(int64(t)) {
			return fmt.Sprint(int64(t))
		}
		return fmt.Sprint(t)
	default:
		return fmt.Sprint(t)
	}
}

// Subset reports whether every field of want has the same value in have. Maps may hold more
// fields in have (defaults the API server filled in); lists must be as long, element by
// element a subset. It is the cheap test that lets an unchanged object cost no request; an
// object it calls changed is checked again with a server-side dry run.
func Subset(want, have any) bool {
	switch w := want.(type) {
	case map[string]any:
		h, ok := have.(map[string]any)
		if !ok {
			return len(w) == 0 && have == nil
		}
		for k, wv := range w {
			if k == "creationTimestamp" && wv == nil {
				continue
			}
			hv, present := h[k]
			if !present {
				if isEmpty(wv) {
					continue
				}
				return false
			}
			if !Subset(wv, hv) {
				return false
			}
		}
		return true
	case []any:
		h, ok := have.([]any)
		if !ok {
			return len(w) == 0 && have == nil
		}
		if len(w) != len(h) {
			return false
		}
		for i := range w {
			if !Subset(w[i], h[i]) {
				return false
			}
		}
		return true
	case nil:
		return true
	default:
		return sameScalar(want, have)
	}
}

// sameScalar is scalar(want) == scalar(have) without formatting the values when both are of
// one type, as nearly every field is: a 1,000-node plan compares some 500,000 of them twice.
func sameScalar(want, have any) bool {
	switch w := want.(type) {
	case string:
		if h, ok := have.(string); ok {
			return w == h
		}
	case int64:
		if h, ok := have.(int64); ok {
			return w == h
		}
	case bool:
		if h, ok := have.(bool); ok {
			return w == h
		}
	}
	return scalar(want) == scalar(have)
}

func isEmpty(v any) bool {
	switch t := v.(type) {
	case nil:
		return true
	case map[string]any:
		return len(t) == 0
	case []any:
		return len(t) == 0
	case string:
		return t == ""
	}
	return false
}
