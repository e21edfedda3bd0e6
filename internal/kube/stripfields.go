package kube

import "bytes"

// managedFieldsKey opens the member dropped by withoutManagedFields.
var managedFieldsKey = []byte(`"managedFields":`)

// withoutManagedFields returns the JSON document raw without any object member named
// managedFields, and whether it found one to drop. It works in place: raw's bytes are
// reused (the output never runs ahead of the input).
//
// A LIST's managed-fields records are about half of its bytes and more than half of what
// decoding it allocates (maps of "f:…" keys, one per field per manager), and nothing reads
// them (ListManaged dropped them after decoding). Cutting them from the bytes first halves
// the decoding. The scan follows JSON's strings and escapes, so the name only counts as an
// object key, never inside a string; only a list (or null) is dropped, so an
// annotation or label of that name stays.
func withoutManagedFields(raw []byte) ([]byte, bool) {
	if !bytes.Contains(raw, managedFieldsKey) {
		return raw, false
	}
	out := raw[:0]
	found := false
	i := 0
	for i < len(raw) {
		c := raw[i]
		if c != '"' {
			out = append(out, c)
			i++
			continue
		}
		// A string starts here (the scan is never inside one at this point).
		end := stringEnd(raw, i)
		if bytes.HasPrefix(raw[i:], managedFieldsKey) && end == i+len(managedFieldsKey)-2 && isKeyPosition(out) && listOrNull(raw, end+2) {
			vEnd := valueEnd(raw, end+2)
			if vEnd < 0 {
				return raw, false // malformed: let the decoder say so
			}
			found = true
			// Drop the member and one comma next to it: the one after it, else the one before.
			if vEnd < len(raw) && raw[vEnd] == ',' {
				vEnd++
			} else if n := len(out); n > 0 && out[n-1] == ',' {
				out = out[:n-1]
			}
			i = vEnd
			continue
		}
		if end < 0 {
			return raw, false
		}
		out = append(out, raw[i:end+1]...)
		i = end + 1
	}
	return out, found
}

// listOrNull reports whether the value at raw[i] is a list or null, as metadata.managedFields
// is: an annotation or label of that name (a string) stays.
func listOrNull(raw []byte, i int) bool {
	return i < len(raw) && (raw[i] == '[' || bytes.HasPrefix(raw[i:], []byte("null")))
}

// isKeyPosition reports whether a string starting after out is an object key: it follows
// '{' or ','. Inside an array a string after ',' is a value, but no array holds the bytes
// `"managedFields":` as a value followed by ':' in valid JSON.
func isKeyPosition(out []byte) bool {
	n := len(out)
	return n > 0 && (out[n-1] == '{' || out[n-1] == ',')
}

// stringEnd returns the index of the closing quote of the string opening at raw[i], or -1.
func stringEnd(raw []byte, i int) int {
	for j := i + 1; j < len(raw); j++ {
		switch raw[j] {
		case '\\':
			j++
		case '"':
			return j
		}
	}
	return -1
}

// valueEnd returns the index just past the JSON value starting at raw[i] (no whitespace
// before it: the API server's JSON is compact), or -1.
func valueEnd(raw []byte, i int) int {
	if i >= len(raw) {
		return -1
	}
	switch raw[i] {
	case '"':
		if e := stringEnd(raw, i); e >= 0 {
			return e + 1
		}
		return -1
	case '{', '[':
		depth := 0
		for j := i; j < len(raw); j++ {
			switch raw[j] {
			case '"':
				e := stringEnd(raw, j)
				if e < 0 {
					return -1
				}
				j = e
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return -1
	default: // number, true, false, null
		j := i
		for j < len(raw) && raw[j] != ',' && raw[j] != '}' && raw[j] != ']' {
			j++
		}
		return j
	}
}
