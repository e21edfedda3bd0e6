package engine

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"slipway.dev/slipway/internal/engine/spire"
	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/spec"
)

// TestSpirePodLabels: the spire step reads the nodes' LabelSpirePod values from the run's
// objects (spire.PodLabels, through the lane.Objects the root lends it: Apply takes them out
// of the plan before any step), a stub converted; a role's
// Deployment and other kinds are no node's. The label of a stub that does not convert is an
// error, never "" (the alias entry would bind to no pod).
func TestSpirePodLabels(t *testing.T) {
	dep := func(name string, labels map[string]any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment",
			"metadata": map[string]any{"name": name, "namespace": "demo", "labels": map[string]any{spec.LabelNode: name}},
			"spec":     map[string]any{"template": map[string]any{"metadata": map[string]any{"labels": labels}}}}}
	}
	web := dep("web", map[string]any{spec.LabelNode: "web", spec.LabelSpirePod: "0123456789abcdef"})
	api := dep("api", map[string]any{spec.LabelNode: "api", spec.LabelSpirePod: "fedcba9876543210"})
	role := dep("web-db", map[string]any{spec.LabelNode: "web", spec.LabelRole: "db", spec.LabelSpirePod: "1111111111111111"})
	cm := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "web", "namespace": "demo", "labels": map[string]any{spec.LabelNode: "web"}}}}
	apiStub := plan.Stub("apps/v1", "Deployment", "demo", "api", map[string]string{spec.LabelNode: "api"})

	t.Run("objects and a converted stub", func(t *testing.T) {
		objs := newObjectSet([]*unstructured.Unstructured{web, apiStub, role, cm},
			plan.Deferred{plan.KeyOf(api): func() (*unstructured.Unstructured, error) { return api, nil }})
		got, err := spire.PodLabels(laneObjects{objs})
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]string{"web": "0123456789abcdef", "api": "fedcba9876543210"}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("labels (-want +got):\n%s", diff)
		}
	})
	t.Run("stub that does not convert", func(t *testing.T) {
		objs := newObjectSet([]*unstructured.Unstructured{web, apiStub},
			plan.Deferred{plan.KeyOf(api): func() (*unstructured.Unstructured, error) { return nil, errors.New("no") }})
		if _, err := spire.PodLabels(laneObjects{objs}); err == nil {
			t.Fatal("no error for a stub that does not convert")
		}
	})
}
