package render_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"slipway.dev/slipway/internal/render"
	"slipway.dev/slipway/internal/spec"
)

// TestSelectorsCarryTheGroup: every selector that picks a node's or a role's pods by name
// (Services, NetworkPolicies and their peers, PodDisruptionBudgets) also asks for the
// deployment's group label, so that a foreign pod labelled app.kubernetes.io/name=<node> in
// the namespace is never an endpoint of slipway's Service nor governed by its policy
// (issue 46 item 5). The group rendered is a per-app target with a deployment id: the label
// value is its key.
func TestSelectorsCarryTheGroup(t *testing.T) {
	for _, file := range []string{"testdata/group/slipway.yaml", "testdata/workload/disruption.yaml", "testdata/workload/servicemonitor.yaml", "testdata/firewall/reach.yaml"} {
		t.Run(file, func(t *testing.T) {
			whole, err := spec.Load(file)
			if err != nil {
				t.Fatal(err)
			}
			g, err := whole.ForDeployment(spec.TargetAll, "x7")
			if err != nil {
				t.Fatal(err)
			}
			in := fakeInput(g)
			in.Namespace = whole.Name + "-x7"
			in.ServiceMonitors = true
			objs, err := render.Objects(in)
			if err != nil {
				t.Fatal(err)
			}
			key := whole.Name + ".all.x7"
			check := func(what string, sel map[string]string) {
				t.Helper()
				if _, byName := sel[spec.LabelName]; byName && sel[spec.LabelGroup] != key {
					t.Errorf("%s selects %v: no %s=%s", what, sel, spec.LabelGroup, key)
				}
			}
			checkPeers := func(what string, peers []networkingv1.NetworkPolicyPeer) {
				for _, p := range peers {
					if p.PodSelector != nil && p.NamespaceSelector == nil {
						check(what+" peer", p.PodSelector.MatchLabels)
					}
				}
			}
			n := 0
			for _, o := range objs {
				switch o := o.(type) {
				case *corev1.Service:
					n++
					check("Service "+o.Name, o.Spec.Selector)
				case *networkingv1.NetworkPolicy:
					n++
					check("NetworkPolicy "+o.Name, o.Spec.PodSelector.MatchLabels)
					for _, r := range o.Spec.Ingress {
						checkPeers("NetworkPolicy "+o.Name, r.From)
					}
					for _, r := range o.Spec.Egress {
						checkPeers("NetworkPolicy "+o.Name, r.To)
					}
				case *policyv1.PodDisruptionBudget:
					n++
					check("PodDisruptionBudget "+o.Name, o.Spec.Selector.MatchLabels)
				case interface{ GetLabels() map[string]string }:
					if l := o.GetLabels(); l[spec.LabelGroup] != "" && l[spec.LabelGroup] != key {
						t.Errorf("%T %v: group label %q, want %q", o, o.(metav1.Object).GetName(), l[spec.LabelGroup], key)
					}
				}
			}
			if n == 0 {
				t.Fatal("no Service, NetworkPolicy or budget rendered: the test checks nothing")
			}
		})
	}
}
