package kube_test

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"slipway.dev/slipway/internal/devcluster/devtest"
	"slipway.dev/slipway/internal/kube"
)

// A kind no test installs: the dev cluster's discovery never lists it, whatever CRDs other
// tests leave installed (the ServiceMonitor's among them, see devtest.ServiceMonitorCRD).
var absentKind = schema.GroupVersionKind{Group: "absent.slipway.test", Version: "v1", Kind: "Absent"}

// TestServesKind asks the dev cluster's discovery: a built-in kind is served, a kind of a
// group the cluster lacks is not, nor an unknown kind of a group it has; a managed kind that
// a cluster may lack lists as none, not as an error. The ServiceMonitor's own case, on its
// installed CRD, is e2e/servicemonitor_test.go's.
func TestServesKind(t *testing.T) {
	env := devtest.Env(t)
	c, err := kube.New(env.Kubeconfig, "")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, tc := range []struct {
		gvk  schema.GroupVersionKind
		want bool
	}{
		{schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, true},
		{absentKind, false},
		{schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Absent"}, false},
	} {
		got, err := c.ServesKind(ctx, tc.gvk)
		if err != nil || got != tc.want {
			t.Errorf("ServesKind(%s) = %t, %v; want %t", tc.gvk, got, err, tc.want)
		}
	}

	saved := kube.ManagedKinds
	kube.ManagedKinds = append(append([]schema.GroupVersionKind(nil), saved...), absentKind)
	kube.OptionalKinds[absentKind] = true
	t.Cleanup(func() { kube.ManagedKinds = saved; delete(kube.OptionalKinds, absentKind) })
	if _, err := c.ListManaged(ctx, "default", "slipway.dev/group=kinds-test"); err != nil {
		t.Errorf("ListManaged with a kind the cluster lacks: %v", err)
	}
	delete(kube.OptionalKinds, absentKind)
	if _, err := c.ListManaged(ctx, "default", "slipway.dev/group=kinds-test"); err == nil {
		t.Error("ListManaged of a kind the cluster lacks that is not optional: no error")
	}
}
