package dryrun

import (
	"encoding/json"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"slipway.dev/slipway/internal/plan"
)

// A create in a namespace that does not exist yet is refused by the API server with
// NamespaceNotFound after it has checked only what it checks before it looks the namespace
// up: the request's size, and that the body decodes against the kind's schema (field names
// and value types). Validation and admission come after the namespace, so a dry run there
// cannot see them (see Run). Both checks depend on no other value: a request passes the
// size check when a larger one did, and an object decodes when another of its kind with the
// same field paths and value types did (slipway renders from typed objects, so every value of
// a given type is one the server decodes).
//
// So, for apply, the creates of a group's first apply into a new namespace need one dry run
// per shape (kind, field paths and value types), the largest of each: at 1,000 nodes of one
// shape that is 6 dry runs, not 5,002. A shape whose representative the server refuses has
// all its objects dry-run, so that every refused object is named, as plan names them.
// `plan` itself still dry-runs every create (issue 12): it is the command that answers
// "what would the server say about each object".

// groups splits the creates of todo in the missing namespace ns by shape; objects
// elsewhere (cluster-scoped, or with a live object) come back in others.
func groups(todo []*unstructured.Unstructured, live map[plan.Key]*unstructured.Unstructured, ns string) (groups [][]*unstructured.Unstructured, others []*unstructured.Unstructured) {
	byShape := map[string]int{}
	for _, d := range todo {
		if d.GetNamespace() != ns || ns == "" || live[plan.KeyOf(d)] != nil {
			others = append(others, d)
			continue
		}
		s := d.GetAPIVersion() + " " + d.GetKind() + "\n" + shapeOf(d.Object)
		i, ok := byShape[s]
		if !ok {
			i = len(groups)
			byShape[s] = i
			groups = append(groups, nil)
		}
		groups[i] = append(groups[i], d)
	}
	// The largest of each shape first: it is the one dry-run.
	for _, g := range groups {
		sizes := make(map[*unstructured.Unstructured]int, len(g))
		for _, d := range g {
			sizes[d] = encodedSize(d)
		}
		slices.SortStableFunc(g, func(a, b *unstructured.Unstructured) int { return sizes[b] - sizes[a] })
	}
	return groups, others
}

// encodedSize is the size of d's JSON, the body of its apply request.
func encodedSize(d *unstructured.Unstructured) int {
	b, err := json.Marshal(d.Object)
	if err != nil {
		return 1 << 62 // cannot be encoded: the dry run will say why
	}
	return len(b)
}

// shapeOf is the sorted list of v's field paths with their value types: what the server's
// decoding of an apply body looks at. List items share a path ("[]").
func shapeOf(v any) string {
	seen := map[string]bool{}
	shapeWalk(v, "", seen)
	paths := make([]string, 0, len(seen))
	for p := range seen {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	return strings.Join(paths, "\n")
}

func shapeWalk(v any, path string, seen map[string]bool) {
	switch t := v.(type) {
	case map[string]any:
		seen[path+":map"] = true
		for k, c := range t {
			shapeWalk(c, path+"."+k, seen)
		}
	case []any:
		seen[path+":list"] = true
		for _, c := range t {
			shapeWalk(c, path+"[]", seen)
		}
	case string:
		seen[path+":string"] = true
	case bool:
		seen[path+":bool"] = true
	case nil:
		seen[path+":null"] = true
	default: // int64, float64
		seen[path+":number"] = true
	}
}
