package e2e

// Issue 46, reproductions 5 and 9 against the dev cluster.

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"slipway.dev/slipway/internal/devcluster"
	"slipway.dev/slipway/internal/devcluster/devtest"
	"slipway.dev/slipway/internal/spec"
)

// foreignPodGroup is one published node web in a namespace it shares (sharedNamespace).
const foreignPodGroup = `group: {{GROUP}}
sharedNamespace: true
nodes:
  web:
    image: {rootfs: nodes/web/rootfs}
    init: none
    firewall: {served: [80], published: [80]}
`

// TestForeignPodsNotSelected (issue 46 item 5): in a namespace the group shares, another
// chart's pods labelled app.kubernetes.io/name=web (as every Helm chart labels its pods) —
// one ready, one crash looping — are not endpoints of slipway's Service web, not governed by
// slipway's NetworkPolicies, not counted by web's rollout, and outlive destroy.
//
// With the old behaviour it fails three ways: the Service's selector was the name alone, so
// the ready foreign pod became an endpoint of its EndpointSlice; every policy's podSelector
// matched it; and the rollout's wait read the pods of the name, counting a pod no ReplicaSet
// owns that matches the Deployment's selector (the name alone) as a pod of an older template
// still present, so the apply never became ready and failed at --timeout ("2 pods still
// present (chart-web-…)").
func TestForeignPodsNotSelected(t *testing.T) {
	t.Parallel()
	g := NewGroup(t, "fpod", foreignPodGroup, "web")
	ctx := context.Background()
	pods := g.Kube.Clientset.CoreV1().Pods(g.Name)
	if _, err := g.Kube.Clientset.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: g.Name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The ServiceAccount admission refuses a pod of a namespace whose default ServiceAccount
	// its controller has not made yet, after retrying for under 2 s; on a loaded machine the
	// controller can take longer than that after the namespace's creation.
	devtest.WaitFor(t, time.Minute, "namespace "+g.Name+" has its default ServiceAccount", func() (bool, string) {
		_, err := g.Kube.Clientset.CoreV1().ServiceAccounts(g.Name).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, fmt.Sprint(err)
	})
	foreign := map[string]string{"chart-web-ready": "", "chart-web-crash": devcluster.OutcomeCrashLoop}
	for name, outcome := range foreign {
		c := corev1.Container{Name: "main", Image: "registry.example/chart/web:1"}
		if outcome != "" {
			c.Env = []corev1.EnvVar{{Name: devcluster.DevPodVar, Value: outcome}}
		}
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{spec.LabelName: "web", "app.kubernetes.io/instance": "chart"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{c}}}
		if _, err := pods.Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	var readyIP string
	devtest.WaitFor(t, time.Minute, "the foreign ready pod runs with an address", func() (bool, string) {
		p, err := pods.Get(ctx, "chart-web-ready", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		readyIP = p.Status.PodIP
		return readyIP != "" && podReady(p), "phase " + string(p.Status.Phase) + ", address " + readyIP
	})

	start := time.Now()
	g.MustRun(0, "apply", "--yes", "--timeout", "90s")
	t.Logf("apply took %s", time.Since(start).Round(time.Second))

	// The Service's endpoints: slipway's pod only, never the foreign one.
	var slipwayIPs []string
	devtest.WaitFor(t, time.Minute, "Service web has its endpoint", func() (bool, string) {
		l, err := g.Kube.Clientset.DiscoveryV1().EndpointSlices(g.Name).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=web"})
		if err != nil {
			return false, err.Error()
		}
		slipwayIPs = nil
		for _, s := range l.Items {
			for _, ep := range s.Endpoints {
				slipwayIPs = append(slipwayIPs, ep.Addresses...)
			}
		}
		return len(slipwayIPs) > 0, strings.Join(slipwayIPs, ", ")
	})
	if slices.Contains(slipwayIPs, readyIP) {
		t.Errorf("the foreign pod's address %s is an endpoint of slipway's Service web: %v", readyIP, slipwayIPs)
	}
	svc, err := g.Kube.Clientset.CoreV1().Services(g.Name).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	foreignLabels := labels.Set{spec.LabelName: "web", "app.kubernetes.io/instance": "chart"}
	if labels.SelectorFromSet(svc.Spec.Selector).Matches(foreignLabels) {
		t.Errorf("Service web's selector %v takes the foreign pods", svc.Spec.Selector)
	}
	// Every policy slipway wrote: none governs the foreign pods.
	nps, err := g.Kube.Clientset.NetworkingV1().NetworkPolicies(g.Name).List(ctx, metav1.ListOptions{LabelSelector: spec.LabelGroup + "=" + g.Name})
	if err != nil || len(nps.Items) == 0 {
		t.Fatalf("slipway's NetworkPolicies: %v, %d", err, len(nps.Items))
	}
	for _, np := range nps.Items {
		sel, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector)
		if err != nil {
			t.Fatal(err)
		}
		if sel.Matches(foreignLabels) {
			t.Errorf("NetworkPolicy %s (podSelector %s) governs the foreign pods", np.Name, sel)
		}
	}

	g.MustRun(0, "destroy", "--yes")
	for name := range foreign {
		if p, err := pods.Get(ctx, name, metav1.GetOptions{}); err != nil || p.DeletionTimestamp != nil {
			t.Errorf("foreign pod %s after destroy: %v (deleting: %v)", name, err, p != nil && p.DeletionTimestamp != nil)
		}
	}
}

// TestDestroyWithoutStateKeepsMovedClaims (issue 46 item 9): after `apply --move-namespace`
// from the group's namespace to another, the old namespace keeps the claim for the operator
// to copy (docs/plan-apply.md). A destroy of the same file naming the old namespace, run where
// no state is, refuses, naming the claim: the namespace and the claim stay (same UIDs), and
// the moved group is untouched. With the old behaviour that destroy found the namespace
// labelled with the group, took it as its own and deleted it with the claim.
func TestDestroyWithoutStateKeepsMovedClaims(t *testing.T) {
	t.Parallel()
	g := NewGroup(t, "mvd", migrateGroup, "solo")
	old, moved := g.Name, g.Name+"-b"
	g.dropNamespaces(moved)
	g.MustRun(0, "apply", "--yes")
	claim := g.roClaimUID("solo")
	g.MustRun(0, "apply", "--yes", "-n", moved, "--move-namespace")
	if got := g.groupObjects(old); !slices.Equal(got, []string{"PersistentVolumeClaim/solo-state"}) {
		t.Fatalf("objects of the group left in %s after the move: %v, want the claim alone", old, got)
	}
	ctx := context.Background()
	ns, err := g.Kube.Clientset.CoreV1().Namespaces().Get(ctx, old, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	before := g.settled([]string{moved}, nil)

	none := "file://" + filepath.Join(t.TempDir(), "none.json")
	r := g.MustRun(1, "destroy", "--yes", "-n", old, "--state", none)
	if want := "destroy will not delete them on their label alone"; !strings.Contains(r.Stderr, want) || !strings.Contains(r.Stderr, "solo-state") {
		t.Errorf("destroy without a state: want the refusal %q naming solo-state, got %s", want, r)
	}
	after, err := g.Kube.Clientset.CoreV1().Namespaces().Get(ctx, old, metav1.GetOptions{})
	if err != nil || after.UID != ns.UID || after.DeletionTimestamp != nil {
		t.Fatalf("namespace %s after the refused destroy: %v (deleting: %v)", old, err, after != nil && after.DeletionTimestamp != nil)
	}
	if got := g.roClaimUID("solo"); got != claim {
		t.Errorf("claim solo-state of %s: UID %s, was %s", old, got, claim)
	}
	if d := cmp.Diff(before, g.view([]string{moved}, nil)); d != "" {
		t.Errorf("the moved group changed (-before +after):\n%s", d)
	}
	g.MustRun(0, "destroy", "--yes", "-n", moved)
}
