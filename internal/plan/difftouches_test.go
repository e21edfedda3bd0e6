package plan

import "testing"

func TestDiffTouches(t *testing.T) {
	diff := []FieldDiff{{Path: "spec.replicas"}, {Path: "spec.template.spec.containers[0].env[0].value"}}
	for _, tc := range []struct {
		part string
		want bool
	}{{"spec.template.", true}, {".image", false}, {"spec.replicas", true}} {
		if got := DiffTouches(diff, tc.part); got != tc.want {
			t.Errorf("DiffTouches(%q) = %v, want %v", tc.part, got, tc.want)
		}
	}
}
