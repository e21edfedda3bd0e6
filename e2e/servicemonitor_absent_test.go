package e2e

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"slipway.dev/slipway/internal/devcluster"
	"slipway.dev/slipway/internal/devcluster/devtest"
	"slipway.dev/slipway/internal/kube"
)

// skippedNote is the start of the note plan and apply give for a role whose ServiceMonitor the
// cluster cannot hold.
const skippedNote = "note: no ServiceMonitor for role worker of node web: the cluster has no ServiceMonitor kind (monitoring.coreos.com/v1, the Prometheus Operator's CRD)"

// TestServiceMonitorWithoutCRD runs on a real API server that has never had the ServiceMonitor
// CRD: a second, core-only dev cluster (the shared one keeps the CRD once a test installed it).
// A role asks for a ServiceMonitor: plan says it is skipped and why, apply succeeds with the
// role's metrics Service and without the ServiceMonitor; once the CRD is installed, the next
// plan makes it, apply does, and the plan after has no changes and no note.
func TestServiceMonitorWithoutCRD(t *testing.T) {
	t.Parallel()
	g := NewGroup(t, "smonabsent", monitorGroup, "web")
	env, _, err := devcluster.Up(context.Background(), devcluster.Options{
		// Core: the publishing parts listen on fixed ports the shared environment holds.
		Dir: filepath.Join(t.TempDir(), "dev"), Core: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := devcluster.Down(env.Dir); err != nil {
			t.Errorf("dev down %s: %v", env.Dir, err)
		}
	})
	if g.Kube, err = kube.New(env.Kubeconfig, ""); err != nil {
		t.Fatal(err)
	}
	g.Env, g.Kubeconfig = env, env.Kubeconfig
	ctx := context.Background()
	if ok, err := g.Kube.ServesKind(ctx, kube.ServiceMonitorKind); err != nil || ok {
		t.Fatalf("the second dev cluster serves ServiceMonitor: %t, %v; want a cluster without the CRD", ok, err)
	}

	p := g.MustRun(0, "plan")
	if !strings.Contains(p.Stdout+p.Stderr, skippedNote) {
		t.Errorf("plan without the CRD: want the note %q, got %s", skippedNote, p)
	}
	create := func(kind string) string { return "+   create   " + kind + " " + g.Name + "/web-worker-metrics" }
	if strings.Contains(p.Stdout, create("ServiceMonitor")) || !strings.Contains(p.Stdout, create("Service")) {
		t.Errorf("plan without the CRD: want the metrics Service web-worker-metrics and no ServiceMonitor, got %s", p)
	}
	a := g.MustRun(0, "apply", "--yes")
	if !strings.Contains(a.Stdout+a.Stderr, skippedNote) {
		t.Errorf("apply without the CRD: want the note %q, got %s", skippedNote, a)
	}
	if _, err := g.Kube.Clientset.CoreV1().Services(g.Name).Get(ctx, "web-worker-metrics", metav1.GetOptions{}); err != nil {
		t.Errorf("the role's metrics Service after apply without the CRD: %v", err)
	}
	if r := g.MustRun(0, "plan"); !strings.Contains(r.Stdout, "No changes.") || !strings.Contains(r.Stdout+r.Stderr, skippedNote) {
		t.Errorf("plan after apply without the CRD: want No changes. and the note, got %s", r)
	}

	devtest.ServiceMonitorCRD(t, env)
	p = g.MustRun(0, "plan")
	if strings.Contains(p.Stdout+p.Stderr, "no ServiceMonitor") || !strings.Contains(p.Stdout, create("ServiceMonitor")) {
		t.Errorf("plan once the CRD is installed: want ServiceMonitor web-worker-metrics made and no note, got %s", p)
	}
	g.MustRun(0, "apply", "--yes")
	if _, err := g.Kube.Dynamic.Resource(serviceMonitors).Namespace(g.Name).Get(ctx, "web-worker-metrics", metav1.GetOptions{}); err != nil {
		t.Errorf("ServiceMonitor web-worker-metrics after apply with the CRD: %v", err)
	}
	if r := g.MustRun(0, "plan"); !strings.Contains(r.Stdout, "No changes.") || strings.Contains(r.Stdout+r.Stderr, "no ServiceMonitor") {
		t.Errorf("plan after apply with the CRD: want No changes. and no note, got %s", r)
	}
}
