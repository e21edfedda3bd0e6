package e2e

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// envOf resolves the variable name of the pod's first container as the kubelet does: a value,
// or a downward-API field of the pod itself. kwok runs no container, so this reads what the
// container would get from the pod object the API server holds.
func envOf(t *testing.T, p *corev1.Pod, name string) string {
	t.Helper()
	for _, e := range p.Spec.Containers[0].Env {
		if e.Name != name {
			continue
		}
		if e.ValueFrom == nil {
			return e.Value
		}
		if f := e.ValueFrom.FieldRef; f != nil {
			switch f.FieldPath {
			case "metadata.uid":
				return string(p.UID)
			case "metadata.name":
				return p.Name
			}
		}
		t.Fatalf("pod %s: env %s: a source this test does not resolve: %+v", p.Name, name, e.ValueFrom)
	}
	t.Fatalf("pod %s: no env %s", p.Name, name)
	return ""
}

// Every pod of a role has its own machine ID (FR-013, SC-005a): container_uuid is the pod's
// UID, so two replicas differ and neither has the main pod's; the main pod keeps the node's
// machine ID from the state.
func TestRolePodsOwnMachineIDs(t *testing.T) {
	t.Parallel()
	g := NewGroup(t, "roleid", helloGroup, "web", "db")
	g.MustRun(0, "apply", "--yes")
	st := g.State().State
	pods, err := g.Kube.Clientset.CoreV1().Pods(g.Name).List(context.Background(), metav1.ListOptions{LabelSelector: "slipway.dev/node=web"})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]string{} // machine ID → pod
	workers := 0
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.DeletionTimestamp != nil {
			continue
		}
		id := envOf(t, p, "container_uuid")
		if id == "" {
			t.Errorf("pod %s: empty container_uuid", p.Name)
		}
		if other, dup := seen[id]; dup {
			t.Errorf("pods %s and %s share the machine ID %s", other, p.Name, id)
		}
		seen[id] = p.Name
		switch p.Labels["app.kubernetes.io/name"] {
		case "web":
			if id != st.Nodes["web"].MachineID {
				t.Errorf("main pod %s: container_uuid %s, the state has %s", p.Name, id, st.Nodes["web"].MachineID)
			}
		case "web-worker":
			workers++
		}
	}
	if workers != 2 {
		t.Fatalf("web-worker: %d pods, want 2 (%d pods of node web)", workers, len(pods.Items))
	}
}
