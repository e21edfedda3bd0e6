package e2e

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestTargetIsNotAGroupOfTheJoinedName (issue 46 item 1): target front of group G runs as
// deployment G.front in namespace G-front. A group file `group: G-front`, whose default
// namespace is the same, is another deployment: its plan, apply and destroy are refused,
// naming the owner, and the target's nodes and claim stay.
func TestTargetIsNotAGroupOfTheJoinedName(t *testing.T) {
	t.Parallel()
	g := NewGroup(t, "idj", targetsGroup, "web", "cache", "db")
	front := g.Name + "-front"
	g.dropNamespaces(front)
	g.MustRun(0, "apply", "--yes", "--target", "front")
	claim, err := g.Kube.Clientset.CoreV1().PersistentVolumeClaims(front).Get(context.Background(), "web-state", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}

	g.WriteFile("other/nodes/web/rootfs/etc/hostname", "web\n")
	g.WriteFile("other/slipway.yaml", "group: "+front+"\nnodes:\n  web:\n    image: {rootfs: nodes/web/rootfs}\n")
	owner := "namespace " + front + " belongs to group " + g.Name + ".front, not " + front
	for _, args := range [][]string{{"plan"}, {"apply", "--yes"}, {"destroy", "--yes"}} {
		r := g.Run(append(args, "-f", "other/slipway.yaml")...)
		if r.Code == 0 || !strings.Contains(r.Stderr, owner) {
			t.Errorf("%v of group %s: want a refusal with %q, got %s", args, front, owner, r)
		}
	}
	if d := cmp.Diff([]string{"cache", "web"}, g.deployments(front)); d != "" {
		t.Errorf("Deployments of target front after group %s's runs (-want +got):\n%s", front, d)
	}
	after, err := g.Kube.Clientset.CoreV1().PersistentVolumeClaims(front).Get(context.Background(), "web-state", metav1.GetOptions{})
	if err != nil || after.UID != claim.UID {
		t.Errorf("claim %s/web-state after group %s's runs: %v (UID %s, want %s)", front, front, err, after.UID, claim.UID)
	}
	g.MustRun(0, "plan", "--detailed-exitcode", "--target", "front")
	g.MustRun(0, "destroy", "--yes", "--target", "front")
}

// TestDeploymentIDsSideBySide (issue 46 item 2): a deployment id is a deployment: applied
// after the same target without one it gets its own state, lock, namespace and objects; its
// destroy leaves the other.
func TestDeploymentIDsSideBySide(t *testing.T) {
	t.Parallel()
	g := NewGroup(t, "idd", targetsGroup, "web", "cache", "db")
	front, x7 := g.Name+"-front", g.Name+"-front-x7"
	g.dropNamespaces(front, x7)
	g.MustRun(0, "apply", "--yes", "--target", "front")
	g.MustRun(0, "apply", "--yes", "--target", "front", "--deployment-id", "x7")
	for _, ns := range []string{front, x7} {
		if d := cmp.Diff([]string{"cache", "web"}, g.deployments(ns)); d != "" {
			t.Errorf("Deployments of %s (-want +got):\n%s", ns, d)
		}
	}
	r := g.MustRun(0, "state", "list")
	for _, want := range []string{g.Name + ".front\t", g.Name + ".front.x7\tgroup " + g.Name + ", target front, deployment id x7"} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("state list lacks %q:\n%s", want, r.Stdout)
		}
	}
	if st := g.stateOf(g.Name + ".front.x7"); st.State == nil || st.State.Namespace != x7 {
		t.Errorf("state of deployment x7: %+v", st)
	}
	g.MustRun(0, "destroy", "--yes", "--target", "front", "--deployment-id", "x7")
	if d := cmp.Diff([]string{"cache", "web"}, g.deployments(front)); d != "" {
		t.Errorf("Deployments of %s after destroying deployment x7 (-want +got):\n%s", front, d)
	}
	g.MustRun(0, "plan", "--detailed-exitcode", "--target", "front")
	g.MustRun(0, "destroy", "--yes", "--target", "front")
}

// TestSystemNamespacesRefused (issue 46 item 6): plan refuses default and kube-* before it
// changes anything, naming the rule.
func TestSystemNamespacesRefused(t *testing.T) {
	t.Parallel()
	g := NewGroup(t, "ids", targetsGroup, "web", "cache", "db")
	for _, ns := range []string{"kube-system", "default", "kube-public"} {
		r := g.Run("plan", "-n", ns)
		if want := "namespace " + ns + " is a system namespace"; r.Code == 0 || !strings.Contains(r.Stderr, want) {
			t.Errorf("plan -n %s: want a refusal with %q, got %s", ns, want, r)
		}
	}
	// The reproduction (group kube, --target system: kube-system): the rule applies to
	// the namespace the target computes, not only to -n. kube-front is kube-* as well, which
	// Kubernetes reserves for its own namespaces, so it is refused like kube-system.
	r := g.Run("plan", "-n", "kube", "--target", "front")
	if want := "namespace kube-front is a system namespace"; r.Code == 0 || !strings.Contains(r.Stderr, want) {
		t.Errorf("plan -n kube --target front: want a refusal with %q, got %s", want, r)
	}
}
