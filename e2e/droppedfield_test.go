package e2e

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"slipway.dev/slipway/internal/spec"
)

// placedGroup places web on the dev cluster's kwok nodes (labelled type=kwok, untainted: the
// toleration is never needed, the pod still schedules).
const placedGroup = `group: {{GROUP}}
defaults:
  state: {size: 1Gi}
nodes:
  web:
    image: {rootfs: nodes/web/rootfs}
    firewall: {served: [80]}
    placement:
      nodeSelector: {type: kwok}
      tolerations:
        - {key: dedicated, operator: Equal, value: web, effect: NoSchedule}
`

// A field slipway applied and the file drops (web's whole placement) is a change: plan shows
// the update of the Deployment (exit 2), apply removes the tolerations and the node selector,
// and the next plan has no changes. An object applied before the applied hash existed (the
// annotation taken off, as a group of an older slipway has it) gets it once, restarting no pod.
func TestDroppedFieldIsAChange(t *testing.T) {
	t.Parallel()
	g := NewGroup(t, "df", placedGroup, "web")
	g.MustRun(0, "apply", "--yes")
	d := g.roDeployment("web")
	if len(d.Spec.Template.Spec.Tolerations) != 1 || d.Spec.Template.Spec.NodeSelector["type"] != "kwok" {
		t.Fatalf("web after apply: tolerations %v, node selector %v", d.Spec.Template.Spec.Tolerations, d.Spec.Template.Spec.NodeSelector)
	}
	if d.Annotations[spec.AnnotationAppliedHash] == "" || d.Spec.Template.Annotations[spec.AnnotationAppliedHash] != "" {
		t.Errorf("web's applied hash: %q on the Deployment (want one), %q on its pod template (want none)",
			d.Annotations[spec.AnnotationAppliedHash], d.Spec.Template.Annotations[spec.AnnotationAppliedHash])
	}

	g.WriteFile("slipway.yaml", strings.Replace(strings.ReplaceAll(placedGroup, "{{GROUP}}", g.Name),
		`    placement:
      nodeSelector: {type: kwok}
      tolerations:
        - {key: dedicated, operator: Equal, value: web, effect: NoSchedule}
`, "", 1))
	r := g.MustRun(2, "plan", "--detailed-exitcode")
	for _, want := range []string{"tolerations", "nodeSelector"} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("plan without the placement does not show %s going:\n%s", want, r)
		}
	}
	if diff := cmp.Diff([]string{"web: update Deployment/web"}, g.Plan().ChangeLines()); diff != "" {
		t.Errorf("plan without the placement (-want +got):\n%s", diff)
	}
	g.MustRun(0, "apply", "--yes")
	d = g.roDeployment("web")
	if ps := d.Spec.Template.Spec; len(ps.Tolerations) != 0 || len(ps.NodeSelector) != 0 {
		t.Errorf("web after apply without the placement: tolerations %v, node selector %v", ps.Tolerations, ps.NodeSelector)
	}
	if r := g.MustRun(0, "plan", "--detailed-exitcode"); !strings.Contains(r.Stdout, "No changes.") {
		t.Errorf("plan after apply: want No changes., got %s", r)
	}

	// As an older slipway left it: no applied hash. One metadata-only update adds it.
	patch := []byte(`[{"op":"remove","path":"/metadata/annotations/` + strings.ReplaceAll(spec.AnnotationAppliedHash, "/", "~1") + `"}]`)
	if _, err := g.Kube.Clientset.AppsV1().Deployments(g.Name).Patch(context.Background(), "web", types.JSONPatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"web: update Deployment/web"}, g.Plan().ChangeLines()); diff != "" {
		t.Errorf("plan of a Deployment without its applied hash (-want +got):\n%s", diff)
	}
	before := g.PodUIDs()
	g.MustRun(0, "apply", "--yes")
	if diff := cmp.Diff(before, g.PodUIDs()); diff != "" {
		t.Errorf("pods after the applied hash was added (-want +got):\n%s", diff)
	}
	if g.roDeployment("web").Annotations[spec.AnnotationAppliedHash] == "" {
		t.Errorf("web has no applied hash after apply")
	}
	if r := g.MustRun(0, "plan", "--detailed-exitcode"); !strings.Contains(r.Stdout, "No changes.") {
		t.Errorf("plan after the applied hash was added: want No changes., got %s", r)
	}
}
