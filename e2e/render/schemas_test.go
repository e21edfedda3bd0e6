package render_test

// JSON schemas for kubeconform, generated offline from the dev API server's OpenAPI v2
// document the way kubeconform's openapi2jsonschema makes its "-standalone-strict" set: one
// file per kind and version, needing no other file, in which an object with properties admits
// no other key. The document carries the installed CRDs too (Gateway API routes,
// ServiceMonitor), so their objects are checked against the schemas the cluster enforces.

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// schemaLocation is where kubeconform finds the files writeSchemas makes in dir: its own
// naming, {kind}-{first label of the group}-{version}.json in lower case (service-v1.json,
// deployment-apps-v1.json, httproute-gateway-v1.json).
func schemaLocation(dir string) string {
	return filepath.Join(dir, "{{ .ResourceKind }}{{ .KindSuffix }}.json")
}

type gvk struct{ Group, Version, Kind string }

func (k gvk) fileName() string {
	name := k.Kind
	if k.Group != "" {
		group, _, _ := strings.Cut(k.Group, ".")
		name += "-" + group
	}
	return strings.ToLower(name+"-"+k.Version) + ".json"
}

// writeSchemas writes a strict standalone schema for every kind of the OpenAPI v2 document
// openapi into dir and returns how many it wrote.
func writeSchemas(openapi []byte, dir string) (int, error) {
	var doc struct {
		Definitions map[string]map[string]any `json:"definitions"`
	}
	if err := json.Unmarshal(openapi, &doc); err != nil {
		return 0, fmt.Errorf("openapi v2 document: %w", err)
	}
	strict := map[string]any{}
	for name, def := range doc.Definitions {
		strict[name] = strictSchema(def)
	}
	n := 0
	for name, def := range doc.Definitions {
		kinds, err := kindsOf(def)
		if err != nil {
			return n, fmt.Errorf("openapi v2 definition %s: %w", name, err)
		}
		if len(kinds) == 0 {
			continue
		}
		// Standalone: the definition at the root, every definition it reaches beside it, so
		// that its "#/definitions/…" references resolve inside the file (recursive ones too).
		file := map[string]any{}
		for k, v := range strict[name].(map[string]any) {
			file[k] = v
		}
		reached := map[string]any{}
		for _, ref := range references(doc.Definitions, name) {
			reached[ref] = strict[ref]
		}
		file["definitions"] = reached
		b, err := json.Marshal(file)
		if err != nil {
			return n, fmt.Errorf("schema of %s: %w", name, err)
		}
		for _, k := range kinds {
			if err := os.WriteFile(filepath.Join(dir, k.fileName()), b, 0o644); err != nil {
				return n, err
			}
			n++
		}
	}
	return n, nil
}

// kindsOf reads a definition's x-kubernetes-group-version-kind: the kinds it is the schema of.
func kindsOf(def map[string]any) ([]gvk, error) {
	raw, ok := def["x-kubernetes-group-version-kind"]
	if !ok {
		return nil, nil
	}
	b, err := json.Marshal(raw)
	if err != nil {
		return nil, err
	}
	var kinds []gvk
	if err := json.Unmarshal(b, &kinds); err != nil {
		return nil, fmt.Errorf("x-kubernetes-group-version-kind: %w", err)
	}
	return kinds, nil
}

// references lists the definitions that name reaches through "$ref", name itself included
// when it refers to itself.
func references(defs map[string]map[string]any, name string) []string {
	seen := map[string]bool{}
	var out []string
	queue := []string{name}
	for len(queue) > 0 {
		var next []string
		for _, n := range queue {
			walkRefs(defs[n], func(ref string) {
				if !seen[ref] {
					seen[ref] = true
					out = append(out, ref)
					next = append(next, ref)
				}
			})
		}
		queue = next
	}
	return out
}

func walkRefs(v any, found func(string)) {
	switch v := v.(type) {
	case map[string]any:
		if ref, ok := v["$ref"].(string); ok {
			if name, ok := strings.CutPrefix(ref, "#/definitions/"); ok {
				found(name)
			}
		}
		for _, e := range v {
			walkRefs(e, found)
		}
	case []any:
		for _, e := range v {
			walkRefs(e, found)
		}
	}
}

// strictSchema is a copy of the schema s in which every object schema with properties admits
// no other key (unless it says what others it admits, or keeps unknown fields as the API
// server does with x-kubernetes-preserve-unknown-fields), and an int-or-string admits both.
// It walks schema keywords only: a property named "properties" is a property, not a keyword.
func strictSchema(s map[string]any) map[string]any {
	if s["format"] == "int-or-string" {
		return map[string]any{"oneOf": []any{map[string]any{"type": "string"}, map[string]any{"type": "integer"}}}
	}
	out := make(map[string]any, len(s)+1)
	for k, v := range s {
		out[k] = v
	}
	if props, ok := s["properties"].(map[string]any); ok {
		strictProps := make(map[string]any, len(props))
		for name, p := range props {
			strictProps[name] = strictAny(p)
		}
		out["properties"] = strictProps
		if _, has := s["additionalProperties"]; !has && s["x-kubernetes-preserve-unknown-fields"] != true {
			out["additionalProperties"] = false
		}
	}
	for _, k := range []string{"items", "additionalProperties", "not"} {
		if v, ok := s[k]; ok {
			out[k] = strictAny(v)
		}
	}
	for _, k := range []string{"allOf", "anyOf", "oneOf"} {
		if list, ok := s[k].([]any); ok {
			l := make([]any, len(list))
			for i, e := range list {
				l[i] = strictAny(e)
			}
			out[k] = l
		}
	}
	return out
}

// strictAny is strictSchema of a value that may be a schema or not (additionalProperties: true).
func strictAny(v any) any {
	if m, ok := v.(map[string]any); ok {
		return strictSchema(m)
	}
	return v
}
