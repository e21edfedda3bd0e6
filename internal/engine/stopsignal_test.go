package engine

import (
	"context"
	"errors"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/spec"
)

// The decision of SPEC §5's stop signal, with the cluster's answer injected: every branch, and
// that a run asks once. e2e/contract_test.go runs both paths against real API servers (the dev
// cluster, gate off; a second one started with ContainerStopSignals=true).
func TestStopSignal(t *testing.T) {
	systemd := &spec.Group{Name: "g", Nodes: []*spec.Node{{Name: "web", Init: spec.InitSystemd}, {Name: "db", Init: spec.InitNone}}}
	plain := &spec.Group{Name: "g", Nodes: []*spec.Node{{Name: "db", Init: spec.InitNone}}}
	withSignal := map[plan.Key]plan.Object{
		{Kind: "Deployment", Namespace: "g", Name: "web"}: &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"template": map[string]any{"spec": map[string]any{
			"containers": []any{map[string]any{"name": "node", "lifecycle": map[string]any{"stopSignal": "SIGRTMIN+3"}}}}}}}},
	}
	signal := corev1.SIGRTMINPLUS3
	typedSignal := map[plan.Key]plan.Object{
		{Kind: "Deployment", Namespace: "g", Name: "web"}: &appsv1.Deployment{Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "node", Lifecycle: &corev1.Lifecycle{StopSignal: &signal}}}}}}},
	}
	tests := []struct {
		name      string
		group     *spec.Group
		live      map[plan.Key]plan.Object
		nsExists  bool
		supported bool
		err       error
		want      bool
		note      string // a part of the note; "" for none
		asked     []string
	}{
		{"supported", systemd, nil, true, true, nil, true, "", []string{"g"}},
		{"gate off", systemd, nil, true, false, nil, false, "ContainerStopSignals is off", []string{"g"}},
		{"cannot tell", systemd, nil, true, false, errors.New("forbidden"), false, "is unknown (forbidden)", []string{"g"}},
		{"namespace not there yet", systemd, nil, false, true, nil, true, "", []string{"default"}},
		{"a live Deployment keeps one", systemd, withSignal, true, false, nil, true, "", nil},
		{"a typed live Deployment keeps one", systemd, typedSignal, true, false, nil, true, "", nil},
		{"no systemd node", plain, nil, true, true, nil, false, "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var asked []string
			e := New(Options{})
			e.stop.detect = func(_ context.Context, ns string) (bool, error) {
				asked = append(asked, ns)
				return tt.supported, tt.err
			}
			// Twice: plan and the apply that follows in one run ask the cluster once.
			for range 2 {
				got, note := e.stopSignal(context.Background(), tt.group, "g", tt.live, tt.nsExists)
				if got != tt.want || (tt.note == "") != (note == "") || !strings.Contains(note, tt.note) {
					t.Errorf("stopSignal = %t, %q; want %t, a note with %q", got, note, tt.want, tt.note)
				}
			}
			if strings.Join(asked, ",") != strings.Join(tt.asked, ",") {
				t.Errorf("asked the cluster in %v, want %v", asked, tt.asked)
			}
		})
	}
}
