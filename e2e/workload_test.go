package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"slipway.dev/slipway/internal/devcluster/devtest"
)

// workloadGroup sets every workload field of SPEC §3a that items 2 to 5 of issue 15 add. The
// dev cluster's nodes are labelled type=kwok and carry no taint, so the pods still schedule.
const workloadGroup = `group: {{GROUP}}
defaults:
  state: {size: 1Gi}
  labels: {team: ops}
nodes:
  web:
    image: {rootfs: nodes/web/rootfs}
    labels: {example.org/tier: front}
    annotations: {example.org/owner: ops}
    serviceAnnotations: {metallb.universe.tf/loadBalancerIPs: 192.0.2.10}
    firewall: {served: [80, 443], published: [443]}
    placement:
      nodeSelector: {type: kwok}
      tolerations:
        - {key: dedicated, operator: Equal, value: web, effect: NoSchedule}
        - {operator: Exists, effect: NoExecute, tolerationSeconds: 60}
      affinity:
        nodeAffinity:
          preferredDuringSchedulingIgnoredDuringExecution:
            - weight: 1
              preference: {matchExpressions: [{key: kubernetes.io/os, operator: In, values: [linux]}]}
      spread: true
    probes:
      liveness: {http: {port: 80, path: /healthz}, period: 10s, failures: 3}
      startup: {exec: [test, -e, /run/started], period: 5s, failures: 60}
    stopGracePeriod: 90s
    preStopSleep: 5s
    tmpSize: 256Mi
    roles:
      worker:
        replicas: 2
        ports: [8080]
        labels: {team: worker}
        annotations: {example.org/owner: dev}
        placement: {nodeSelector: {type: kwok}, spread: true}
        probes: {liveness: {tcp: 8080}}
      batch:
        replicas: 3
        disruption: {maxUnavailable: "50%"}
      single: {replicas: 1}
  db:
    image: {rootfs: nodes/db/rootfs}
    init: none
    disruption: {minAvailable: 1}
    probes: {liveness: {tcp: 5432, failures: 5}}
    stopGracePeriod: 10s
`

// budgets lists the group's PodDisruptionBudgets as "name max=… min=…".
func budgets(t *testing.T, g *Group) []string {
	t.Helper()
	list, err := g.Kube.Clientset.PolicyV1().PodDisruptionBudgets(g.Name).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range list.Items {
		out = append(out, p.Name+" "+bound("max", p.Spec.MaxUnavailable.String(), p.Spec.MaxUnavailable != nil)+
			bound("min", p.Spec.MinAvailable.String(), p.Spec.MinAvailable != nil)+" selects "+p.Spec.Selector.MatchLabels["app.kubernetes.io/name"])
	}
	slices.Sort(out)
	return out
}

func bound(name, v string, set bool) string {
	if !set {
		return ""
	}
	return name + "=" + v
}

// TestWorkloadDisruptionBudgets: a role of 2+ replicas gets PDB <node>-<role> (maxUnavailable 1
// unless set), a role of one replica and a node's main pod none unless the node sets one; a
// role scaled to one replica loses its budget in plan and apply (pruned).
func TestWorkloadDisruptionBudgets(t *testing.T) {
	t.Parallel()
	g := NewGroup(t, "pdb", workloadGroup, "web", "db")
	g.MustRun(0, "apply", "--yes")
	want := []string{
		"db min=1 selects db",
		"web-batch max=50% selects web-batch",
		"web-worker max=1 selects web-worker",
	}
	if diff := cmp.Diff(want, budgets(t, g)); diff != "" {
		t.Errorf("budgets after apply (-want +got):\n%s", diff)
	}
	if r := g.MustRun(0, "plan"); !strings.Contains(r.Stdout, "No changes.") {
		t.Errorf("plan after apply: want No changes., got %s", r)
	}

	g.WriteFile("slipway.yaml", strings.Replace(strings.ReplaceAll(workloadGroup, "{{GROUP}}", g.Name),
		"replicas: 3", "replicas: 1", 1))
	if got := g.Plan().ChangeLines(); !slices.Contains(got, "web: delete PodDisruptionBudget/web-batch") {
		t.Errorf("plan of batch at one replica does not delete its budget: %q", got)
	}
	g.MustRun(0, "apply", "--yes")
	if diff := cmp.Diff(want[:1:1], slices.DeleteFunc(budgets(t, g), func(s string) bool { return strings.HasPrefix(s, "web-worker ") })); diff != "" {
		t.Errorf("budgets after batch went to one replica (-want +got):\n%s", diff)
	}
}

// TestWorkloadEveryField: the group of every workload field passes a strict server-side dry
// run and applies; the objects carry the fields; a changed label and probe show in plan as an
// update of the Deployment, and apply rolls them out.
func TestWorkloadEveryField(t *testing.T) {
	t.Parallel()
	g := NewGroup(t, "workload", workloadGroup, "web", "db")
	g.MustRun(0, "apply", "--yes")
	ctx := context.Background()
	cs := g.Kube.Clientset

	// The rendered stream, dry-run by the API server with strict field validation.
	stream := g.MustRun(0, "render").Stdout
	kubectl := exec.CommandContext(ctx, filepath.Join(g.Env.BinDir, "kubectl"), "--kubeconfig", g.Env.Kubeconfig,
		"apply", "--server-side", "--force-conflicts", "--field-manager", "workload-e2e", "--dry-run=server", "--validate=strict", "-f", "-")
	kubectl.Stdin = strings.NewReader(stream)
	var out, errb bytes.Buffer
	kubectl.Stdout, kubectl.Stderr = &out, &errb
	if err := kubectl.Run(); err != nil || errb.Len() > 0 {
		t.Fatalf("strict server-side dry run: %v\n%s%s", err, out.String(), errb.String())
	}
	if !strings.Contains(out.String(), "poddisruptionbudget.policy/web-worker serverside-applied (server dry run)") {
		t.Errorf("the dry run did not cover the budgets:\n%s", out.String())
	}

	web, err := cs.AppsV1().Deployments(g.Name).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tmpl := web.Spec.Template
	if tmpl.Labels["team"] != "ops" || tmpl.Labels["example.org/tier"] != "front" || tmpl.Labels["app.kubernetes.io/name"] != "web" {
		t.Errorf("web pod labels %v", tmpl.Labels)
	}
	if tmpl.Annotations["example.org/owner"] != "ops" {
		t.Errorf("web pod annotations %v", tmpl.Annotations)
	}
	ps := tmpl.Spec
	c := ps.Containers[0]
	switch {
	case ps.NodeSelector["type"] != "kwok" || len(ps.Tolerations) != 2 || ps.Affinity == nil || ps.Affinity.NodeAffinity == nil:
		t.Errorf("web placement: selector %v, tolerations %v, affinity %v", ps.NodeSelector, ps.Tolerations, ps.Affinity)
	case len(ps.TopologySpreadConstraints) != 0:
		t.Errorf("web's one pod has a spread: %v", ps.TopologySpreadConstraints)
	case ps.TerminationGracePeriodSeconds == nil || *ps.TerminationGracePeriodSeconds != 90:
		t.Errorf("web grace period %v", ps.TerminationGracePeriodSeconds)
	case c.LivenessProbe == nil || c.LivenessProbe.HTTPGet == nil || c.StartupProbe == nil || c.StartupProbe.FailureThreshold != 60:
		t.Errorf("web probes: liveness %v, startup %v", c.LivenessProbe, c.StartupProbe)
	case c.Lifecycle == nil || c.Lifecycle.PreStop == nil || c.Lifecycle.PreStop.Sleep == nil || c.Lifecycle.PreStop.Sleep.Seconds != 5:
		t.Errorf("web preStop %v", c.Lifecycle)
	}
	for _, v := range ps.Volumes {
		if v.EmptyDir != nil && (v.EmptyDir.SizeLimit == nil || v.EmptyDir.SizeLimit.String() != "256Mi") {
			t.Errorf("web volume %s sizeLimit %v", v.Name, v.EmptyDir.SizeLimit)
		}
	}
	worker, err := cs.AppsV1().Deployments(g.Name).Get(ctx, "web-worker", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wps := worker.Spec.Template.Spec
	if worker.Spec.Template.Labels["team"] != "worker" || len(wps.Tolerations) != 0 || len(wps.TopologySpreadConstraints) != 2 ||
		wps.Containers[0].LivenessProbe == nil || wps.Containers[0].LivenessProbe.TCPSocket == nil {
		t.Errorf("web-worker: labels %v, tolerations %v, spread %v, liveness %v", worker.Spec.Template.Labels,
			wps.Tolerations, wps.TopologySpreadConstraints, wps.Containers[0].LivenessProbe)
	}
	svc, err := cs.CoreV1().Services(g.Name).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if svc.Annotations["metallb.universe.tf/loadBalancerIPs"] != "192.0.2.10" {
		t.Errorf("Service web annotations %v", svc.Annotations)
	}
	if r := g.MustRun(0, "plan"); !strings.Contains(r.Stdout, "No changes.") {
		t.Fatalf("plan after apply: want No changes., got %s", r)
	}

	// A changed label and probe: an update of Deployment web and of the roles that take the
	// node's labels and probes (not worker, which has its own), rolled out by apply.
	changed := strings.NewReplacer("{{GROUP}}", g.Name, "example.org/tier: front", "example.org/tier: edge",
		"period: 10s, failures: 3", "period: 15s, failures: 4").Replace(workloadGroup)
	g.WriteFile("slipway.yaml", changed)
	wantPlan := []string{"web: update Deployment/web", "web: update Deployment/web-batch", "web: update Deployment/web-single"}
	if diff := cmp.Diff(wantPlan, g.Plan().ChangeLines()); diff != "" {
		t.Errorf("plan of a changed label and probe (-want +got):\n%s", diff)
	}
	g.MustRun(0, "apply", "--yes")
	pods, err := cs.CoreV1().Pods(g.Name).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=web"})
	if err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 1 {
		t.Fatalf("web has %d pods after the rollout, want 1", len(pods.Items))
	}
	p := pods.Items[0]
	if lp := p.Spec.Containers[0].LivenessProbe; p.Labels["example.org/tier"] != "edge" || lp == nil || lp.PeriodSeconds != 15 || lp.FailureThreshold != 4 {
		t.Errorf("web's pod after apply: labels %v, liveness %+v", p.Labels, lp)
	}
	if !podReady(&p) {
		t.Errorf("web's new pod is not ready: %+v", p.Status.Conditions)
	}
	if r := g.MustRun(0, "plan"); !strings.Contains(r.Stdout, "No changes.") {
		t.Errorf("plan after the rollout: want No changes., got %s", r)
	}

	// destroy takes the budgets with the rest.
	g.MustRun(0, "destroy", "--yes")
	devtest.WaitFor(t, 2*time.Minute, "PodDisruptionBudget web-worker gone after destroy", func() (bool, string) {
		_, err := cs.PolicyV1().PodDisruptionBudgets(g.Name).Get(ctx, "web-worker", metav1.GetOptions{})
		return apierrors.IsNotFound(err), fmt.Sprintf("get: %v", err)
	})
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
