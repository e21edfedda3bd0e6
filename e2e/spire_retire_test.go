package e2e

// Issue 43 item 9 on the dev environment's SPIRE server: the SPIRE lane's parts (entries,
// the allow list and kubeconfig on the spire node, the cluster-wide rights) outlive neither
// the file's spire: nor the namespace they were made for.

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	authzv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"slipway.dev/slipway/internal/kube"
	"slipway.dev/slipway/internal/spec"
	"slipway.dev/slipway/internal/state"
)

// spireWithout is a group of kwok nodes without spire:, the same nodes otherwise.
func spireWithout(nodes string) string {
	return "group: {{GROUP}}\n" + spireDefaults + "nodes:\n" + nodes
}

// TestSpireRetire: (a) spire: removed, then apply: plan lists every part's removal, apply
// leaves no entry, allow file, kubeconfig or ClusterRole/Binding of the deployment, another
// deployment's on the same server are untouched, and a second apply says No changes.;
// (c) apply --move-namespace: the old namespace's parts are gone, the new namespace's account
// holds the rights and its parts are on the server; (b) spire: removed, then destroy with no
// apply between removes them too.
func TestSpireRetire(t *testing.T) {
	t.Parallel()
	holdSpireKwok(t).take(2) // a of sp-ret, b of sp-keep
	one, _ := newSpireGroup(t, "sp-ret", spireGroup(spireKwokA))
	two, _ := newSpireGroup(t, "sp-keep", spireGroup(spireKwokB))
	adm := newSpireAdmin(t, one.s)
	one.run(0, "apply", "--yes")
	two.run(0, "apply", "--yes")
	for _, g := range []*spireTest{one, two} {
		spireMade(t, g, adm, "a", "b")
	}
	twoBefore := spireSnapshot(t, two, adm)

	t.Run("a: spire removed, then apply", func(t *testing.T) {
		one.writeGroup(spireWithout(spireKwokA))
		r := one.run(0, "plan")
		for _, w := range []string{"spire kubeconfig " + one.cluster, "spire allow-list " + one.Name + ":node-a",
			"spire entry " + one.hostID("a"), "spire clusterrole " + kube.SpireRBACName(one.Name),
			"spire clusterrolebinding " + kube.SpireRBACName(one.Name)} {
			if !strings.Contains(r.Stdout, w) {
				t.Errorf("plan does not list the removal %q:\n%s", w, r.Stdout)
			}
		}
		r = one.run(0, "apply", "--yes")
		t.Logf("apply without spire:\n%s", r)
		spireGone(t, one, adm)
		spireRightsGone(t, one)
		if d := cmp.Diff(twoBefore, spireSnapshot(t, two, adm)); d != "" {
			t.Errorf("another deployment's parts changed (-before +after):\n%s", d)
		}
		if recs := stateFile(t, one.Group, one.Name).Spire; len(recs) != 0 {
			t.Errorf("the state still records %v", recs)
		}
		// The apply also deleted the group's ServiceAccount spire-server and ConfigMap
		// spire-agent, so a second plan has nothing left to do and a second apply changes nothing.
		before, hcl := spireOwnFiles(t, one), readSpireHCL(t, one)
		if r := one.run(0, "plan"); !strings.Contains(r.Stdout, "No changes.") {
			t.Errorf("plan after the apply without spire: want No changes., got %s", r)
		}
		if r := one.run(0, "apply", "--yes"); strings.Contains(r.Stdout+r.Stderr, "SPIRE") || strings.Contains(r.Stderr, "spire (cluster") {
			t.Errorf("second apply: want no SPIRE change, got %s", r)
		}
		if d := cmp.Diff(before, spireOwnFiles(t, one)); d != "" {
			t.Errorf("the second apply changed the spire node's files (-before +after):\n%s", d)
		}
		hcl.unchanged(t, readSpireHCL(t, one), "the second apply")
		spireGone(t, one, adm)
		one.run(0, "destroy", "--yes")
	})

	t.Run("c: apply --move-namespace", func(t *testing.T) {
		old := *two
		moved := *two
		to := two.Name + "-m"
		two.dropNamespaces(to)
		uid, err := two.Kube.KubeSystemUID(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		moved.cluster = spec.SpireCluster(uid, to)
		r := two.run(0, "plan", "-n", to, "--move-namespace")
		for _, w := range []string{"spire kubeconfig " + old.cluster, "spire entry " + old.hostID("b"),
			"spire kubeconfig " + moved.cluster, "spire entry " + moved.hostID("b")} {
			if !strings.Contains(r.Stdout, w) {
				t.Errorf("plan --move-namespace does not list %q:\n%s", w, r.Stdout)
			}
		}
		two.run(0, "apply", "--yes", "-n", to, "--move-namespace")
		spireMovedFrom(t, &old, adm)
		// The new namespace's parts: entries, files, k8s_psat.hcl naming its account.
		if e := adm.entries(t, moved.cluster); len(e) != 2 {
			t.Errorf("entries of %s after the move: %v, want b's 2", moved.cluster, e)
		}
		hcl, _ := os.ReadFile(filepath.Join(two.s.ConfigDir, "k8s_psat.hcl"))
		if !strings.Contains(string(hcl), `"`+to+`:node-b"`) || strings.Contains(string(hcl), `"`+two.Name+`:node-b"`) {
			t.Errorf("k8s_psat.hcl after the move does not allow %s:node-b alone:\n%s", to, hcl)
		}
		// The rights are the new namespace's account's, and the old one's account has none.
		b, err := two.Kube.Clientset.RbacV1().ClusterRoleBindings().Get(context.Background(), kube.SpireRBACName(two.Name), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		want := []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: to, Name: spec.SpireServerAccount}}
		if d := cmp.Diff(want, b.Subjects); d != "" {
			t.Errorf("binding's subjects after the move (-want +got):\n%s", d)
		}
		for ns, allowed := range map[string]bool{to: true, two.Name: false} {
			if got := canReview(t, two, ns); got != allowed {
				t.Errorf("%s:%s may create tokenreviews: %v, want %v", ns, spec.SpireServerAccount, got, allowed)
			}
		}
		if recs := stateFile(t, two.Group, two.Name).Spire; len(recs) != 1 || recs[0].Namespace != to {
			t.Errorf("the state records %v, want the new namespace's alone", recs)
		}
		*two = moved
		two.extraEnv = append(two.extraEnv, "K8S_NAMESPACE="+to)
	})

	t.Run("b: spire removed, then destroy", func(t *testing.T) {
		two.writeGroup(spireWithout(spireKwokB))
		r := two.run(0, "plan", "-destroy")
		for _, w := range []string{"spire kubeconfig " + two.cluster, "spire entry " + two.hostID("b"), "spire clusterrole " + kube.SpireRBACName(two.Name)} {
			if !strings.Contains(r.Stdout, w) {
				t.Errorf("plan -destroy does not list %q:\n%s", w, r.Stdout)
			}
		}
		two.run(0, "destroy", "--yes")
		spireGone(t, two, adm)
		spireRightsGone(t, two)
	})
}

// spireMovedFrom: the server has no entry or agent of old's cluster, the spire node no file
// of it, and k8s_psat.hcl does not name it (the rights, named by the deployment, stay).
func spireMovedFrom(t *testing.T, old *spireTest, adm *spireAdmin) {
	t.Helper()
	if e := adm.entries(t, old.cluster); len(e) != 0 {
		t.Errorf("entries of %s after the move: %v", old.cluster, e)
	}
	for f := range spireFiles(t, old.s.ConfigDir) {
		if strings.HasPrefix(f, "k8s_psat.d/"+old.cluster+"/") || strings.HasPrefix(f, "k8s_psat.d/"+old.cluster+".") {
			t.Errorf("the spire node keeps %s after the move", f)
		}
	}
	if b, err := os.ReadFile(filepath.Join(old.s.ConfigDir, "k8s_psat.hcl")); err != nil || strings.Contains(string(b), `"`+old.cluster+`"`) {
		t.Errorf("k8s_psat.hcl after the move (%v) names %s:\n%s", err, old.cluster, b)
	}
	if a := adm.agents(t, old.cluster); len(a) != 0 {
		t.Errorf("agents of %s after the move: %v", old.cluster, a)
	}
}

// spireMade: the deployment's entries of its nodes, its kubeconfig and allow files and its
// rights are there.
func spireMade(t *testing.T, st *spireTest, adm *spireAdmin, nodes ...string) {
	t.Helper()
	if e := adm.entries(t, st.cluster); len(e) != 2 {
		t.Errorf("entries of %s: %v, want 2", st.cluster, e)
	}
	files := spireFiles(t, st.s.ConfigDir)
	if _, ok := files["k8s_psat.d/"+st.cluster+"/"+st.Name+".kubeconfig"]; !ok {
		t.Errorf("no kubeconfig of %s: %v", st.cluster, files)
	}
	if _, err := st.Kube.Clientset.RbacV1().ClusterRoleBindings().Get(context.Background(), kube.SpireRBACName(st.Name), metav1.GetOptions{}); err != nil {
		t.Errorf("ClusterRoleBinding of %s: %v", st.Name, err)
	}
}

// spireSnapshot is what the server, the spire node and the cluster hold of st's deployment:
// entries (with revisions), files (mtime and hash), the rights' resourceVersions.
func spireSnapshot(t *testing.T, st *spireTest, adm *spireAdmin) map[string]any {
	t.Helper()
	files := map[string]string{}
	for f, v := range spireFiles(t, st.s.ConfigDir) {
		if strings.Contains(f, st.cluster) {
			files[f] = v
		}
	}
	rv := map[string]string{}
	ctx, name := context.Background(), kube.SpireRBACName(st.Name)
	if r, err := st.Kube.Clientset.RbacV1().ClusterRoles().Get(ctx, name, metav1.GetOptions{}); err == nil {
		rv["clusterrole"] = r.ResourceVersion
	}
	if b, err := st.Kube.Clientset.RbacV1().ClusterRoleBindings().Get(ctx, name, metav1.GetOptions{}); err == nil {
		rv["clusterrolebinding"] = b.ResourceVersion
	}
	return map[string]any{"entries": adm.entries(t, st.cluster), "files": files, "rights": rv}
}

// spireRightsGone: neither the ClusterRole nor the binding of st's deployment is left.
func spireRightsGone(t *testing.T, st *spireTest) {
	t.Helper()
	ctx, name := context.Background(), kube.SpireRBACName(st.Name)
	if _, err := st.Kube.Clientset.RbacV1().ClusterRoles().Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("ClusterRole %s: %v, want not found", name, err)
	}
	if _, err := st.Kube.Clientset.RbacV1().ClusterRoleBindings().Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("ClusterRoleBinding %s: %v, want not found", name, err)
	}
}

// canReview asks the API server whether ns's spire-server account may create tokenreviews.
func canReview(t *testing.T, st *spireTest, ns string) bool {
	t.Helper()
	r, err := st.Kube.Clientset.AuthorizationV1().SubjectAccessReviews().Create(context.Background(), &authzv1.SubjectAccessReview{
		Spec: authzv1.SubjectAccessReviewSpec{
			User:               "system:serviceaccount:" + ns + ":" + spec.SpireServerAccount,
			Groups:             []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
			ResourceAttributes: &authzv1.ResourceAttributes{Group: "authentication.k8s.io", Resource: "tokenreviews", Verb: "create"},
		}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return r.Status.Allowed
}

// stateFile is the group's state document as its file holds it.
func stateFile(t *testing.T, g *Group, name string) state.Document {
	t.Helper()
	var d state.Document
	b, err := os.ReadFile(filepath.Join(g.Dir, ".slipway", "state", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	return d
}
