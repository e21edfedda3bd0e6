package e2e

import (
	"context"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// roleInputsGroup: role worker has its own env, ConfigMap web-worker-jobs and Secret
// web-worker-key (SPEC §3a); the node has none.
const roleInputsGroup = `group: {{GROUP}}
nodes:
  web:
    image: {rootfs: nodes/web/rootfs}
    state: {size: 1Gi}
    roles:
      worker:
        replicas: 1
        env:
          QUEUE: {config: jobs, key: queue}
          KEY: {secret: key, key: value}
        config:
          jobs: {files: {queue: conf/queue}}
        secrets:
          key: {fromEnv: {value: SLIPWAY_E2E_ROLE_KEY}}
`

// TestRoleConfigAndSecretRollOutTheRole: a role's own config file change shows in plan as a
// change of its ConfigMap and its Deployment, not the node's, and apply rolls out the role's
// pods only; its Secret holds the environment's value, which no output shows; a role's
// reference to a Secret the namespace lacks fails plan naming the role.
func TestRoleConfigAndSecretRollOutTheRole(t *testing.T) {
	t.Parallel()
	const value = "role-secret-3f9c1a"
	g := NewGroup(t, "rolecfg", roleInputsGroup, "web").WithEnv("SLIPWAY_E2E_ROLE_KEY=" + value)
	g.WriteFile("conf/queue", "jobs\n")
	var outputs []string
	keep := func(r Result) Result { outputs = append(outputs, r.Stdout, r.Stderr); return r }
	keep(g.MustRun(0, "apply", "--yes"))
	ctx := context.Background()
	s, err := g.Kube.Clientset.CoreV1().Secrets(g.Name).Get(ctx, "web-worker-key", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if string(s.Data["value"]) != value {
		t.Errorf("Secret web-worker-key does not hold the environment's value")
	}
	if r := keep(g.MustRun(0, "plan")); !strings.Contains(r.Stdout, "No changes.") {
		t.Fatalf("plan after apply: want No changes., got %s", r)
	}
	before := g.DeploymentPods()

	g.WriteFile("conf/queue", "more-jobs\n")
	lines := g.Plan().ChangeLines()
	for _, want := range []string{"web: update ConfigMap/web-worker-jobs", "web: update Deployment/web-worker"} {
		if !slices.Contains(lines, want) {
			t.Errorf("plan after the role's config file changed lacks %q: %q", want, lines)
		}
	}
	if slices.Contains(lines, "web: update Deployment/web") {
		t.Errorf("plan updates the node's Deployment for its role's config: %q", lines)
	}
	keep(g.MustRun(0, "apply", "--yes"))
	after := g.DeploymentPods()
	if slices.Equal(after["web-worker"], before["web-worker"]) || len(after["web-worker"]) == 0 {
		t.Errorf("role worker was not rolled out: pods %v, before %v", after["web-worker"], before["web-worker"])
	}
	if !slices.Equal(after["web"], before["web"]) {
		t.Errorf("the node's pod was replaced for its role's config: %v, before %v", after["web"], before["web"])
	}
	for i, o := range outputs {
		if strings.Contains(o, value) {
			t.Errorf("output %d shows the role's secret value", i)
		}
	}

	g.WriteFile("slipway.yaml", strings.Replace(strings.ReplaceAll(roleInputsGroup, "{{GROUP}}", g.Name),
		"KEY: {secret: key, key: value}", "KEY: {secret: absent, key: value}", 1))
	r := g.MustRun(1, "plan")
	want := "node web: role worker: env KEY: Secret absent does not exist in namespace " + g.Name + " (slipway.yaml:11)"
	if !strings.Contains(r.Stderr, want) {
		t.Errorf("plan: want %q in stderr, got %s", want, r)
	}
}
