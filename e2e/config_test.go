package e2e

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"slipway.dev/slipway/internal/devcluster/devtest"
	"slipway.dev/slipway/internal/spec"
)

// configGroup has a ConfigMap from a file of the group directory and a Secret from the
// operator's environment (SPEC §3a), both mounted and read by node web.
const configGroup = `group: {{GROUP}}
nodes:
  web:
    image: {rootfs: nodes/web/rootfs}
    state: {size: 1Gi}
    env:
      TOKEN: {secret: app, key: token}
    files:
      - {path: /etc/app, config: app}
      - {path: /etc/app-secrets, secret: app}
    config:
      app: {files: {app.conf: conf/app.conf}}
    secrets:
      app: {fromEnv: {token: SLIPWAY_E2E_APP_TOKEN}}
`

// configHash is the config hash on Deployment web's pod template.
func configHash(t *testing.T, g *Group) string {
	t.Helper()
	d, err := g.Kube.Clientset.AppsV1().Deployments(g.Name).Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return d.Spec.Template.Annotations[spec.AnnotationConfigHash]
}

// webPodUIDs are the UIDs of web's pods (its main Deployment's).
func webPodUIDs(g *Group) []string {
	var out []string
	for name, uid := range g.PodUIDs() {
		if strings.HasPrefix(name, "web-") {
			out = append(out, uid)
		}
	}
	slices.Sort(out)
	return out
}

// TestConfigFileChangeRollsOut: a changed config file of the group directory shows in plan as
// a change of ConfigMap web-app and of Deployment web (its config hash), and apply rolls web
// out with the new content in the ConfigMap.
func TestConfigFileChangeRollsOut(t *testing.T) {
	t.Parallel()
	g := NewGroup(t, "config", configGroup, "web").WithEnv("SLIPWAY_E2E_APP_TOKEN=config-test-token")
	g.WriteFile("conf/app.conf", "listen 8080\n")
	g.MustRun(0, "apply", "--yes")
	ctx := context.Background()
	cm, err := g.Kube.Clientset.CoreV1().ConfigMaps(g.Name).Get(ctx, "web-app", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cm.Data["app.conf"] != "listen 8080\n" {
		t.Errorf("ConfigMap web-app data %q", cm.Data)
	}
	if r := g.MustRun(0, "plan"); !strings.Contains(r.Stdout, "No changes.") {
		t.Fatalf("plan after apply: want No changes., got %s", r)
	}
	hash, pods := configHash(t, g), webPodUIDs(g)

	g.WriteFile("conf/app.conf", "listen 9090\n")
	lines := g.Plan().ChangeLines()
	for _, want := range []string{"web: update ConfigMap/web-app", "web: update Deployment/web"} {
		if !slices.Contains(lines, want) {
			t.Errorf("plan after the config file changed lacks %q: %q", want, lines)
		}
	}
	if r := g.MustRun(0, "plan"); !strings.Contains(r.Stdout, "listen 9090") || !strings.Contains(r.Stdout, spec.AnnotationConfigHash) {
		t.Errorf("plan does not show the config change (the new content and the pod's config hash):\n%s", r)
	}
	g.MustRun(0, "apply", "--yes")
	cm, err = g.Kube.Clientset.CoreV1().ConfigMaps(g.Name).Get(ctx, "web-app", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cm.Data["app.conf"] != "listen 9090\n" {
		t.Errorf("ConfigMap web-app after apply: %q", cm.Data)
	}
	if got := configHash(t, g); got == hash || got == "" {
		t.Errorf("config hash of web's pod template: %q, before %q", got, hash)
	}
	if got := webPodUIDs(g); slices.Equal(got, pods) {
		t.Errorf("web was not rolled out: pods %v as before", got)
	}
}

// TestSecretFromEnvRollsOutUnseen: a secret value changed in the environment rolls web out
// and is in the Secret, but in no output, saved plan file or state.
func TestSecretFromEnvRollsOutUnseen(t *testing.T) {
	t.Parallel()
	const first, second = "first-secret-5e8d1c", "second-secret-9a27f4"
	g := NewGroup(t, "secret", configGroup, "web")
	g.WriteFile("conf/app.conf", "listen 8080\n")
	var outputs []string
	run := func(code int, args ...string) {
		r := g.MustRun(code, args...)
		outputs = append(outputs, r.Stdout, r.Stderr)
	}
	g.WithEnv("SLIPWAY_E2E_APP_TOKEN=" + first)
	run(0, "apply", "--yes")
	ctx := context.Background()
	secretValue := func() string {
		s, err := g.Kube.Clientset.CoreV1().Secrets(g.Name).Get(ctx, "web-app", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return string(s.Data["token"])
	}
	if got := secretValue(); got != first {
		t.Fatalf("Secret web-app token after the first apply is not the environment's value")
	}
	run(0, "plan")
	if !strings.Contains(outputs[len(outputs)-2], "No changes.") {
		t.Fatalf("plan after apply: want No changes., got %s", outputs[len(outputs)-2])
	}
	hash, pods := configHash(t, g), webPodUIDs(g)

	g.WithEnv("SLIPWAY_E2E_APP_TOKEN=" + second)
	planFile := filepath.Join(g.Dir, "plan.json")
	run(0, "plan", "-out", planFile)
	run(0, "plan", "-o", "json")
	run(0, "apply", planFile)
	if got := secretValue(); got != second {
		t.Errorf("Secret web-app token after the second apply is not the environment's new value")
	}
	if got := configHash(t, g); got == hash || got == "" {
		t.Errorf("config hash of web's pod template: %q, before %q", got, hash)
	}
	if got := webPodUIDs(g); slices.Equal(got, pods) {
		t.Errorf("web was not rolled out: pods %v as before", got)
	}
	run(0, "plan")
	run(0, "status")
	run(0, "render")
	run(0, "state", "show", "-o", "json")

	saved, err := os.ReadFile(planFile)
	if err != nil {
		t.Fatal(err)
	}
	places := map[string]string{"plan file": string(saved)}
	for i, o := range outputs {
		places["output "+string(rune('a'+i))] = o
	}
	// The state itself, wherever the backend keeps it: a file beside the group, or a Secret.
	st := g.State()
	if loc := st.Location; strings.HasPrefix(loc, "/") {
		b, err := os.ReadFile(loc)
		if err != nil {
			t.Fatalf("state file %s: %v", loc, err)
		}
		places["state file"] = string(b)
	}
	secrets, err := g.Kube.Clientset.CoreV1().Secrets(g.Name).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range secrets.Items {
		if s.Name == "web-app" {
			continue
		}
		for k, v := range s.Data {
			places["Secret "+s.Name+" "+k] = string(v)
		}
	}
	for where, text := range places {
		for _, v := range []string{first, second, base64.StdEncoding.EncodeToString([]byte(first)), base64.StdEncoding.EncodeToString([]byte(second))} {
			if strings.Contains(text, v) {
				t.Errorf("the secret value is in the %s", where)
			}
		}
	}
	if !strings.Contains(string(saved), spec.AnnotationSecretHash) {
		t.Errorf("the plan file lacks the Secret's hash annotation")
	}
}

// TestMissingReferencedSecretFailsPlan: a Secret or a key that the namespace lacks fails
// plan (and apply) naming the node, the Secret, the key and the line, before any change.
func TestMissingReferencedSecretFailsPlan(t *testing.T) {
	t.Parallel()
	const tmpl = `group: {{GROUP}}
nodes:
  web:
    image: {rootfs: nodes/web/rootfs}
    env:
      DB_PASSWORD: {secret: db-credentials, key: password}
`
	g := NewGroup(t, "missing", tmpl, "web")
	r := g.MustRun(1, "plan")
	want := "node web: env DB_PASSWORD: Secret db-credentials does not exist in namespace " + g.Name + " (slipway.yaml:6)"
	if !strings.Contains(r.Stderr, want) {
		t.Errorf("plan: want %q in stderr, got %s", want, r)
	}
	r = g.MustRun(1, "apply", "--yes")
	if !strings.Contains(r.Stderr, want) {
		t.Errorf("apply: want %q in stderr, got %s", want, r)
	}
	if g.NamespaceExists() {
		t.Errorf("apply made namespace %s before failing", g.Name)
	}
}

// TestRollbackPutsConfigBack (issue 35 item 4): a release that changes the node's ConfigMap
// and fails (here a scripted pod that never becomes ready) is set back with the ConfigMap as
// the template set back read it; the file reverted, plan says `No changes.` and it is true:
// the ConfigMap holds the old content the pod runs with.
func TestRollbackPutsConfigBack(t *testing.T) {
	t.Parallel()
	g := NewGroup(t, "cfgback", configGroup, "web")
	g.WriteFile("conf/app.conf", "listen 8080\n")
	g.WithEnv("SLIPWAY_E2E_APP_TOKEN=token-1")
	g.MustRun(0, "apply", "--yes")
	good := g.roDeployment("web").Spec.Template
	configMap := func() string {
		cm, err := g.Kube.Clientset.CoreV1().ConfigMaps(g.Name).Get(context.Background(), "web-app", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return cm.Data["app.conf"]
	}

	failing := strings.Replace(configGroup, "      TOKEN: {secret: app, key: token}\n", "      TOKEN: {secret: app, key: token}\n      SLIPWAY_DEV_POD: never-ready\n", 1)
	g.WriteFile("slipway.yaml", strings.ReplaceAll(failing, "{{GROUP}}", g.Name))
	g.WriteFile("conf/app.conf", "listen no-such-port\n")
	r := g.MustRun(1, "apply", "--yes", "--timeout", "15s")
	if !strings.Contains(r.Stderr, "put back ConfigMap web-app") || !strings.Contains(r.Stderr, "rolled back to") {
		t.Errorf("the failed apply does not say it put the ConfigMap back and rolled back:\n%s", r)
	}
	if got := configMap(); got != "listen 8080\n" {
		t.Errorf("ConfigMap web-app after the rollback holds %q, want the content the template set back read", got)
	}
	devtest.WaitFor(t, time.Minute, "web ready on the template set back, its failed pod gone", func() (bool, string) {
		d := g.roDeployment("web")
		pods := g.roPods("web")
		return d.Status.ReadyReplicas == 1 && len(pods) == 1 && pods[0].DeletionTimestamp == nil, fmt.Sprintf("%d ready, %d pods", d.Status.ReadyReplicas, len(pods))
	})
	if got := g.roDeployment("web").Spec.Template.Annotations[spec.AnnotationConfigHash]; got != good.Annotations[spec.AnnotationConfigHash] {
		t.Errorf("the template set back has config hash %q, want the one that ran ready %q", got, good.Annotations[spec.AnnotationConfigHash])
	}

	g.WriteFile("slipway.yaml", strings.ReplaceAll(configGroup, "{{GROUP}}", g.Name))
	g.WriteFile("conf/app.conf", "listen 8080\n")
	if p := g.MustRun(0, "plan"); !strings.Contains(p.Stdout, "No changes.") {
		t.Errorf("plan with the file reverted: want No changes., got %s", p)
	}
}
