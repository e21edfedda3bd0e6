package cli

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestNormalizeArgs(t *testing.T) {
	tests := []struct {
		name string
		in   []string
		want []string
	}{
		{"single dash", []string{"plan", "-out", "p.json"}, []string{"plan", "--out", "p.json"}},
		{"with value", []string{"plan", "-out=p.json", "-o", "json"}, []string{"plan", "--out=p.json", "-o", "json"}},
		{"double dash kept", []string{"plan", "--out", "p.json"}, []string{"plan", "--out", "p.json"}},
		{"after terminator", []string{"apply", "--", "-out"}, []string{"apply", "--", "-out"}},
		{"destroy", []string{"plan", "-destroy", "-detailed-exitcode"}, []string{"plan", "--destroy", "--detailed-exitcode"}},
		{"destroy with value", []string{"plan", "-destroy=true"}, []string{"plan", "--destroy=true"}},
		{"destroy double dash kept", []string{"plan", "--destroy"}, []string{"plan", "--destroy"}},
		{"the destroy verb kept", []string{"destroy", "--yes"}, []string{"destroy", "--yes"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, NormalizeArgs(tt.in)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
