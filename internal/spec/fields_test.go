package spec

import "testing"

// TestFieldsReachEverySection: a section the loader checks mappings against but Fields does
// not walk would be a field set missing from the documented reference.
func TestFieldsReachEverySection(t *testing.T) {
	walked := map[*section]bool{}
	var walk func(s *section)
	walk = func(s *section) {
		if walked[s] {
			return
		}
		walked[s] = true
		for _, k := range s.keys {
			if k.sub != nil && !k.same {
				walk(k.sub)
			}
		}
	}
	walk(groupFields)
	for i, s := range allSections {
		if !walked[s] {
			t.Errorf("section %d %v is not reachable from the top of the file except as `same`: Fields does not list its fields", i, s.names())
		}
	}
}
