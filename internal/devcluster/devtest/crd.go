package devtest

import (
	"context"
	_ "embed"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"slipway.dev/slipway/internal/devcluster"
	"slipway.dev/slipway/internal/kube"
)

//go:embed servicemonitor-crd.yaml
var serviceMonitorCRD []byte

// ServiceMonitorCRD makes the dev cluster serve the Prometheus Operator's ServiceMonitor
// (monitoring.coreos.com/v1), installing a test-only CRD when it does not yet, and leaves it
// installed: a CRD is cluster-wide, so removing it would pull it from under a concurrent test.
// The install is a server-side apply, idempotent when two tests race to it; a cluster that
// serves the kind already (a real operator's CRD) is left as it is.
func ServiceMonitorCRD(t testing.TB, env *devcluster.Env) {
	t.Helper()
	c, err := kube.New(env.Kubeconfig, "")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	served := func() (bool, string) {
		ok, err := c.ServesKind(ctx, kube.ServiceMonitorKind)
		if err != nil {
			return false, err.Error()
		}
		return ok, "discovery does not list ServiceMonitor yet"
	}
	if ok, _ := served(); ok {
		return
	}
	var crd unstructured.Unstructured
	if err := yaml.Unmarshal(serviceMonitorCRD, &crd.Object); err != nil {
		t.Fatalf("servicemonitor-crd.yaml: %v", err)
	}
	if _, err := c.Apply(ctx, &crd, kube.ApplyOptions{Force: true}); err != nil {
		t.Fatalf("install the ServiceMonitor CRD: %v", err)
	}
	WaitFor(t, time.Minute, "the ServiceMonitor CRD served", served)
}
