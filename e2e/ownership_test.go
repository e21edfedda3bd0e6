package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"slipway.dev/slipway/internal/devcluster/devtest"
)

// tinyGroup is the group of issue 11: one node solo, ready on tcp 8080, published.
const tinyGroup = `group: {{GROUP}}
nodes:
  solo:
    image: {rootfs: nodes/solo/rootfs}
    init: none
    readiness: {tcp: 8080}
    firewall: {served: [8080], published: [8080]}
`

// TestForeignStateDocument (issue 11 item 6): plan, status and apply of group beta pointed at
// group alpha's state refuse at once, naming both groups, and change nothing.
func TestForeignStateDocument(t *testing.T) {
	t.Parallel()
	alpha := NewGroup(t, "alpha", tinyGroup, "solo")
	alpha.MustRun(0, "apply", "--yes")
	alphaState := filepath.Join(alpha.Dir, ".slipway", "state", alpha.Name+".json")
	before := alpha.State().State

	beta := NewGroup(t, "beta", tinyGroup, "solo").WithEnv("SLIPWAY_STATE=file://" + alphaState)
	for _, verb := range [][]string{{"plan"}, {"status"}, {"apply", "--yes"}, {"destroy", "--yes"}} {
		t.Run(verb[0], func(t *testing.T) {
			r := beta.MustRun(1, verb...)
			if !strings.Contains(r.Stderr, "group "+alpha.Name) || !strings.Contains(r.Stderr, "group "+beta.Name) {
				t.Errorf("want an error naming groups %s and %s, got %s", alpha.Name, beta.Name, r)
			}
		})
	}
	if beta.NamespaceExists() {
		t.Errorf("namespace %s was created by an apply that read another group's state", beta.Name)
	}
	if tags := beta.RepoTags("solo"); tags != nil {
		t.Errorf("images of %s were pushed: %v", beta.Name, tags)
	}
	if after := alpha.State().State; after == nil || after.Serial != before.Serial {
		t.Errorf("alpha's state after beta's runs: %+v, want it at serial %d", after, before.Serial)
	}
}

// groupObjects lists the group's objects in ns as Kind/name, sorted.
func (g *Group) groupObjects(ns string) []string {
	g.t.Helper()
	live, err := g.Kube.ListManaged(context.Background(), ns, "slipway.dev/group="+g.Name)
	if err != nil {
		g.t.Fatal(err)
	}
	var out []string
	for k := range live {
		out = append(out, k.Kind+"/"+k.Name)
	}
	slices.Sort(out)
	return out
}

// foreignNamespace creates namespace ns as kubectl would (no slipway label) with a ConfigMap
// "precious" in it, and returns the ConfigMap's UID.
func (g *Group) foreignNamespace(ns string) string {
	g.t.Helper()
	ctx := context.Background()
	if _, err := g.Kube.Clientset.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		g.t.Fatal(err)
	}
	cm, err := g.Kube.Clientset.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "precious"}, Data: map[string]string{"k": "v"}}, metav1.CreateOptions{})
	if err != nil {
		g.t.Fatal(err)
	}
	return string(cm.UID)
}

// requireUntouched fails unless namespace ns is there, not terminating, without slipway's
// labels, and its ConfigMap precious is the one made (uid).
func (g *Group) requireUntouched(ns, uid string) {
	g.t.Helper()
	ctx := context.Background()
	live, err := g.Kube.Clientset.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if err != nil {
		g.t.Fatalf("namespace %s: %v", ns, err)
	}
	if live.DeletionTimestamp != nil || live.Labels["slipway.dev/group"] != "" || live.Labels["app.kubernetes.io/managed-by"] != "" {
		g.t.Errorf("namespace %s was touched: deletion %v, labels %v", ns, live.DeletionTimestamp, live.Labels)
	}
	cm, err := g.Kube.Clientset.CoreV1().ConfigMaps(ns).Get(ctx, "precious", metav1.GetOptions{})
	if err != nil || string(cm.UID) != uid {
		g.t.Errorf("configmap %s/precious: %v (uid %v, want %s)", ns, err, cm, uid)
	}
}

// TestForeignNamespace (issue 11 item 3): slipway owns a namespace only when it created it.
func TestForeignNamespace(t *testing.T) {
	t.Parallel()
	t.Run("destroy of a group never applied deletes nothing", func(t *testing.T) {
		t.Parallel()
		g := NewGroup(t, "nsnever", tinyGroup, "solo")
		uid := g.foreignNamespace(g.Name)
		r := g.MustRun(0, "destroy", "--yes")
		if !strings.Contains(r.Stderr, "nothing of group "+g.Name) {
			t.Errorf("destroy: want it to say there is nothing of the group, got %s", r)
		}
		g.requireUntouched(g.Name, uid)
	})
	t.Run("apply into it, destroy removes only the group's objects", func(t *testing.T) {
		t.Parallel()
		g := NewGroup(t, "nsinto", tinyGroup, "solo")
		uid := g.foreignNamespace(g.Name)
		r := g.MustRun(0, "plan")
		if n := strings.Count(r.Stdout, "was not created by slipway"); n != 1 {
			t.Errorf("plan: want the namespace said once not to be slipway's, said %d times:\n%s", n, r)
		}
		if strings.Contains(r.Stdout, "Namespace "+g.Name) {
			t.Errorf("plan: the namespace is among the changes:\n%s", r)
		}
		g.MustRun(0, "apply", "--yes")
		g.requireUntouched(g.Name, uid)
		want := []string{"Deployment/solo", "NetworkPolicy/default-deny", "NetworkPolicy/solo", "PersistentVolumeClaim/solo-state", "Service/solo", "ServiceAccount/node-solo"}
		if d := cmp.Diff(want, g.groupObjects(g.Name)); d != "" {
			t.Fatalf("objects of the group after apply (-want +got):\n%s", d)
		}
		r = g.MustRun(0, "plan")
		if !strings.Contains(r.Stdout, "No changes.") || !strings.Contains(r.Stdout, "was not created by slipway") {
			t.Errorf("plan after apply: want No changes. and the namespace note, got %s", r)
		}
		r = g.MustRun(0, "plan", "-destroy")
		if !strings.Contains(r.Stdout, "was not created by slipway") || strings.Contains(r.Stdout, "Namespace "+g.Name) {
			t.Errorf("plan -destroy: want the namespace said to stay and not among the deletions, got %s", r)
		}
		r = g.MustRun(0, "destroy", "--yes")
		if !strings.Contains(r.Stderr, "slipway did not create the namespace") {
			t.Errorf("destroy: want it to say the namespace stays, got %s", r)
		}
		g.requireUntouched(g.Name, uid)
		if got := g.groupObjects(g.Name); len(got) != 0 {
			t.Errorf("objects of the group after destroy: %v, want none (claims included)", got)
		}
		if st := g.State(); st.State != nil {
			t.Errorf("state after destroy: %+v, want none", st.State)
		}
	})
}

// TestSameNamedObjects (issue 11 item 4): a Deployment and a Service solo made by kubectl are
// conflicts in the plan, and apply refuses before any change, naming each.
func TestSameNamedObjects(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	g := NewGroup(t, "adopt", tinyGroup, "solo")
	g.foreignNamespace(g.Name)
	labels := map[string]string{"app": "theirs"}
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "solo"}, Spec: appsv1.DeploymentSpec{
		Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "example.invalid/theirs:1"}}}},
	}}
	if _, err := g.Kube.Clientset.AppsV1().Deployments(g.Name).Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "solo"}, Spec: corev1.ServiceSpec{
		Type: corev1.ServiceTypeClusterIP, Selector: labels, Ports: []corev1.ServicePort{{Name: "http", Port: 80}}}}
	if _, err := g.Kube.Clientset.CoreV1().Services(g.Name).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	versions := func() map[string]string {
		d, err := g.Kube.Clientset.AppsV1().Deployments(g.Name).Get(ctx, "solo", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		s, err := g.Kube.Clientset.CoreV1().Services(g.Name).Get(ctx, "solo", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// The Deployment's status moves with its controller; its generation moves only with a
		// change of its spec, and its labels say who made it.
		return map[string]string{"Deployment": fmt.Sprint(d.Generation, d.Labels), "Service": s.ResourceVersion}
	}
	before := versions()

	p := g.Plan()
	var got []string
	for _, l := range p.ChangeLines() {
		if strings.HasSuffix(l, "/solo") && !strings.Contains(l, "NetworkPolicy") {
			got = append(got, l)
		}
	}
	want := []string{"solo: conflict Deployment/solo", "solo: conflict Service/solo"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("plan -o json, the changes of Deployment and Service solo (-want +got):\n%s", d)
	}
	r := g.MustRun(0, "plan")
	for _, k := range []string{"Deployment", "Service"} {
		if !strings.Contains(r.Stdout, "conflict "+k+" "+g.Name+"/solo") {
			t.Errorf("plan: want %s solo listed as a conflict, got %s", k, r)
		}
	}

	r = g.MustRun(1, "apply", "--yes")
	for _, k := range []string{"Deployment", "Service"} {
		if !strings.Contains(r.Stderr, k+" "+g.Name+"/solo exists and slipway did not make it") {
			t.Errorf("apply: want an error naming %s %s/solo, got %s", k, g.Name, r)
		}
	}
	if d := cmp.Diff(before, versions()); d != "" {
		t.Errorf("kubectl's objects changed (resourceVersion -want +got):\n%s", d)
	}
	if got := g.groupObjects(g.Name); len(got) != 0 {
		t.Errorf("apply made objects before refusing: %v", got)
	}
	if tags := g.RepoTags("solo"); tags != nil {
		t.Errorf("apply pushed %v before refusing", tags)
	}
}

// TestTerminatingClaim (issue 11 item 5): a claim held in Terminating by pvc-protection is
// shown as being deleted, with the node's state lost, and apply will not roll out its node.
func TestTerminatingClaim(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	g := NewGroup(t, "pvcgone", tinyGroup, "solo")
	g.MustRun(0, "apply", "--yes")
	pvcs := g.Kube.Clientset.CoreV1().PersistentVolumeClaims(g.Name)
	if err := pvcs.Delete(ctx, "solo-state", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	claim, err := pvcs.Get(ctx, "solo-state", metav1.GetOptions{})
	if err != nil || claim.DeletionTimestamp == nil {
		t.Fatalf("claim solo-state after its deletion: %v, %v: want it held in Terminating (pvc-protection)", claim, err)
	}

	if d := cmp.Diff([]string{"solo: terminating PersistentVolumeClaim/solo-state destructive"}, g.Plan().ChangeLines()); d != "" {
		t.Errorf("plan -o json (-want +got):\n%s", d)
	}
	r := g.MustRun(2, "plan", "--detailed-exitcode")
	if strings.Contains(r.Stdout, "No changes.") || !strings.Contains(r.Stdout, "the node's state on /var/lib is lost") {
		t.Errorf("plan: want the claim shown as being deleted with the node's state, got %s", r)
	}

	dep := func() string {
		d, err := g.Kube.Clientset.AppsV1().Deployments(g.Name).Get(ctx, "solo", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return d.ResourceVersion
	}
	before := dep()
	// A change that rolls the node out: apply must refuse it rather than start a pod whose
	// claim is going.
	g.WriteFile("slipway.yaml", strings.ReplaceAll(strings.Replace(tinyGroup, "init: none", "init: none\n    env: {TZ: UTC}", 1), "{{GROUP}}", g.Name))
	r = g.MustRun(1, "apply", "--yes")
	if !strings.Contains(r.Stderr, "PersistentVolumeClaim "+g.Name+"/solo-state: being deleted") || !strings.Contains(r.Stderr, "will not roll out node solo") {
		t.Errorf("apply: want node solo refused, naming its claim, got %s", r)
	}
	if after := dep(); after != before {
		t.Errorf("Deployment solo changed (resourceVersion %s -> %s) while its claim is being deleted", before, after)
	}
}

// TestTerminatingNamespace (issue 11 item 5): plan says the namespace is being deleted (not
// `No changes.`, not a raw forbidden error) and apply refuses before any change.
func TestTerminatingNamespace(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	g := NewGroup(t, "nsgoing", tinyGroup, "solo")
	g.MustRun(0, "apply", "--yes")
	// A finalizer nobody removes holds the namespace in Terminating for as long as the test runs.
	hold := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "hold", Finalizers: []string{"slipway.dev/e2e-hold"}}}
	if _, err := g.Kube.Clientset.CoreV1().ConfigMaps(g.Name).Create(ctx, hold, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = g.Kube.Clientset.CoreV1().ConfigMaps(g.Name).Patch(context.Background(), "hold", types.MergePatchType,
			[]byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	})
	if err := g.Kube.Clientset.CoreV1().Namespaces().Delete(ctx, g.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// Once the namespace controller removed the group's objects, plan would create them all,
	// and the API server forbids every create in the namespace.
	devtest.WaitFor(t, 2*time.Minute, "the group's objects gone after their namespace's deletion", func() (bool, string) {
		objs := g.groupObjects(g.Name)
		return len(objs) == 0, fmt.Sprint(objs)
	})
	for _, args := range [][]string{{"plan"}, {"plan", "-o", "json"}} {
		r := g.MustRun(0, args...)
		if strings.Contains(r.Stdout, "No changes.") || strings.Contains(r.Stderr, "forbidden") ||
			!strings.Contains(r.Stdout, "terminating") || !strings.Contains(r.Stdout, "being deleted outside slipway") {
			t.Errorf("%v: want the namespace shown as being deleted, got %s", args, r)
		}
	}
	r := g.MustRun(1, "apply", "--yes")
	if !strings.Contains(r.Stderr, "Namespace "+g.Name+": being deleted outside slipway") || strings.Contains(r.Stderr, "forbidden") {
		t.Errorf("apply: want a refusal naming the namespace being deleted, got %s", r)
	}
}

// TestStateInGroupNamespace (issue 11 item 10): with the state in the group's own namespace,
// destroy says first that the state goes with it, and exits 0.
func TestStateInGroupNamespace(t *testing.T) {
	t.Parallel()
	g := NewGroup(t, "statens", tinyGroup, "solo")
	g.WithEnv("SLIPWAY_STATE=kubernetes://" + g.Name)
	g.MustRun(0, "apply", "--yes")
	if st := g.State(); st.State == nil {
		t.Fatalf("state show after apply: no state in kubernetes://%s", g.Name)
	}
	r := g.MustRun(0, "destroy", "--yes")
	said := strings.Index(r.Stderr, "goes with it")
	gone := strings.Index(r.Stderr, "namespace "+g.Name+" is gone")
	if said < 0 || gone < 0 || said > gone {
		t.Errorf("destroy: want it to say the state goes with the namespace before it is gone, got %s", r)
	}
	if strings.Contains(r.Stderr, "unlock") || strings.Contains(r.Stderr, "warning") {
		t.Errorf("destroy: an unlock complaint or a warning (renewing a lock that goes with the namespace) after a destroy that succeeded: %s", r)
	}
	if g.NamespaceExists() {
		t.Errorf("namespace %s still exists after destroy", g.Name)
	}
}
