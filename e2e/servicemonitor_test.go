package e2e

import (
	"context"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"slipway.dev/slipway/internal/devcluster/devtest"
	"slipway.dev/slipway/internal/spec"
)

const monitorGroup = `group: {{GROUP}}
nodes:
  web:
    image: {rootfs: nodes/web/rootfs}
    state: {size: 1Gi}
    roles:
      worker:
        replicas: 1
        metrics: 9101
        serviceMonitor: true
`

var serviceMonitors = schema.GroupVersionResource{Group: "monitoring.coreos.com", Version: "v1", Resource: "servicemonitors"}

// TestServiceMonitorWithCRD: with the ServiceMonitor CRD installed (a test-only one, left
// installed: devtest.ServiceMonitorCRD), apply makes ServiceMonitor web-worker-metrics, which
// selects the role's metrics Service alone and scrapes its port; plan then says No changes.;
// a role that no longer asks for one has it pruned. Once installed, the CRD stays for every
// test of the cluster: the absent CRD's note is TestServiceMonitorWithoutCRD's, on a second
// dev cluster (and internal/engine's TestPlanServiceMonitor on the fake).
func TestServiceMonitorWithCRD(t *testing.T) {
	t.Parallel()
	g := NewGroup(t, "smon", monitorGroup, "web")
	devtest.ServiceMonitorCRD(t, g.Env)
	r := g.MustRun(0, "apply", "--yes")
	if strings.Contains(r.Stderr, "no ServiceMonitor") {
		t.Errorf("apply noted a missing ServiceMonitor kind with the CRD installed:\n%s", r)
	}
	ctx := context.Background()
	sm, err := g.Kube.Dynamic.Resource(serviceMonitors).Namespace(g.Name).Get(ctx, "web-worker-metrics", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("ServiceMonitor web-worker-metrics: %v", err)
	}
	sel, _, _ := unstructured.NestedStringMap(sm.Object, "spec", "selector", "matchLabels")
	svcs, err := g.Kube.Clientset.CoreV1().Services(g.Name).List(ctx, metav1.ListOptions{LabelSelector: metav1.FormatLabelSelector(&metav1.LabelSelector{MatchLabels: sel})})
	if err != nil {
		t.Fatal(err)
	}
	if len(svcs.Items) != 1 || svcs.Items[0].Name != "web-worker-metrics" {
		var names []string
		for _, s := range svcs.Items {
			names = append(names, s.Name)
		}
		t.Errorf("the ServiceMonitor's selector %v matches Services %v, want web-worker-metrics alone", sel, names)
	}
	eps, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
	if len(eps) != 1 || eps[0].(map[string]any)["port"] != "tcp-9101" {
		t.Errorf("the ServiceMonitor's endpoints %v, want the port tcp-9101", eps)
	}
	if sm.GetLabels()[spec.LabelGroup] != g.Name {
		t.Errorf("the ServiceMonitor lacks the group label: %v", sm.GetLabels())
	}
	if r := g.MustRun(0, "plan"); !strings.Contains(r.Stdout, "No changes.") {
		t.Fatalf("plan after apply: want No changes., got %s", r)
	}

	g.WriteFile("slipway.yaml", strings.Replace(strings.ReplaceAll(monitorGroup, "{{GROUP}}", g.Name), "serviceMonitor: true", "serviceMonitor: false", 1))
	g.MustRun(0, "apply", "--yes")
	if _, err := g.Kube.Dynamic.Resource(serviceMonitors).Namespace(g.Name).Get(ctx, "web-worker-metrics", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("ServiceMonitor web-worker-metrics after the role stopped asking for it: %v, want not found", err)
	}
}
