package dryrun

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// A node moving behind the Gateway or away from it has its Service replaced, not updated.
func TestServiceTypeChange(t *testing.T) {
	svc := func(typ string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"kind": "Service", "spec": map[string]any{"type": typ}}}
	}
	for _, tt := range []struct {
		name          string
		desired, live *unstructured.Unstructured
		want          string
	}{
		{"to the Gateway", svc("ClusterIP"), svc("LoadBalancer"), "its type changes from LoadBalancer to ClusterIP"},
		{"away from it", svc("LoadBalancer"), svc("ClusterIP"), "its type changes from ClusterIP to LoadBalancer"},
		{"same type", svc("LoadBalancer"), svc("LoadBalancer"), ""},
		{"new", svc("ClusterIP"), nil, ""},
	} {
		if got := serviceTypeChange(tt.desired, tt.live); got != tt.want {
			t.Errorf("%s: serviceTypeChange = %q, want %q", tt.name, got, tt.want)
		}
	}
}
