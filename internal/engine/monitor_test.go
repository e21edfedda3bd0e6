package engine

import (
	"context"
	"slices"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"slipway.dev/slipway/internal/image"
	"slipway.dev/slipway/internal/kube"
	"slipway.dev/slipway/internal/spec"
	"slipway.dev/slipway/internal/state"
)

// TestPlanServiceMonitor: a role with serviceMonitor gets its ServiceMonitor in the plan when
// the cluster serves the kind; without it, the plan has none and a note naming the role and
// the missing CRD, and does not fail. e2e/servicemonitor_test.go runs the first case on the
// dev cluster with the CRD installed.
func TestPlanServiceMonitor(t *testing.T) {
	metrics := spec.Port{Protocol: spec.TCP, Number: 9101}
	grp := &spec.Group{Name: "demo", Nodes: []*spec.Node{{Name: "web", Roles: []*spec.Role{
		{Name: "worker", Replicas: 1, Metrics: &metrics, ServiceMonitor: true},
		{Name: "plain", Replicas: 1, Metrics: &metrics},
	}}}}
	jobs := []image.Job{{Name: "web", Repository: "reg/demo/web", Source: image.Source{Rootfs: "web"}}}
	for _, tc := range []struct {
		name     string
		served   bool
		monitors []string
		note     string
	}{
		{"the cluster has the CRD", true, []string{"web-worker-metrics"}, ""},
		{"the cluster lacks it", false, nil, "no ServiceMonitor for role worker of node web: the cluster has no ServiceMonitor kind (monitoring.coreos.com/v1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeCluster()
			f.Serves = map[schema.GroupVersionKind]bool{kube.ServiceMonitorKind: tc.served}
			b, reg := &fakeBuilder{imgs: map[string]v1.Image{}}, &fakeRegistry{tags: map[string]v1.Hash{}}
			store := &memStore{Doc: &state.Document{Group: "demo", Nodes: map[string]*state.NodeState{"web": {MachineID: "id"}}}}
			tgt := Target{Group: grp, Namespace: "demo", Jobs: jobs, Store: store}
			p, err := New(Options{Kube: f, Builder: b, Publisher: reg}).Plan(context.Background(), tgt)
			if err != nil {
				t.Fatal(err)
			}
			var monitors []string
			for _, d := range p.Desired {
				if d.GetKind() == "ServiceMonitor" {
					monitors = append(monitors, d.GetName())
				}
			}
			if !slices.Equal(monitors, tc.monitors) {
				t.Errorf("ServiceMonitors planned %v, want %v", monitors, tc.monitors)
			}
			notes := strings.Join(p.Notes, "\n")
			if tc.note == "" && strings.Contains(notes, "ServiceMonitor") || !strings.Contains(notes, tc.note) {
				t.Errorf("notes %q, want one with %q", p.Notes, tc.note)
			}
		})
	}
}
