package e2e

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"slipway.dev/slipway/internal/devcluster/devtest"
)

// realMigrationGroup is node db on the dev cluster's real node, where its state step runs:
// busybox, a claim, the state version {{VERSION}}. Its container appends {{STAMP}} to
// /var/lib/data/log, then runs and is ready, or with {{FAIL}} set exits 3 (a release that
// fails after it wrote to the data) before it is ready.
const realMigrationGroup = `group: {{GROUP}}
nodes:
  db:
    image:
      base: ${K8S_REGISTRY}/slipway-dev/busybox:static
      command: [/bin/sh, -c, 'trap "exit 0" TERM; mkdir -p /var/lib/data; echo "$STAMP" >>/var/lib/data/log; [ -z "$FAIL" ] || exit 3; : >/tmp/up; sleep 3600 & wait']
    init: none
    readiness: {exec: [/bin/sh, -c, 'test -f /tmp/up']}
    env: {STAMP: "{{STAMP}}", FAIL: "{{FAIL}}"}
    state: {size: 1Gi, version: "{{VERSION}}"}
    placement:
      nodeSelector: {slipway.dev/real-node: "true"}
      tolerations: [{key: slipway.dev/real-node, operator: Equal, value: "true", effect: NoSchedule}]
`

// TestMigrationRestoreOnRealNode (SPEC §6a, issue 35 item 1): the state step runs in a real
// container on the real node. A migration from 1 to 2 whose release crashes is set back with
// the template that names the hand-over (SLIPWAY_STATE_RESTORE=2); its state step puts back
// the copy taken at 1 and handed to 2: the failed release's write is gone, the version is 1
// again, and no copy is left.
func TestMigrationRestoreOnRealNode(t *testing.T) {
	t.Parallel()
	g := NewGroup(t, "migreal", "", "db")
	if g.Env.RealNode == "" {
		t.Fatalf("the dev cluster has no real node: %s", g.Env.NoRealNode)
	}
	write := func(version, stamp, fail string) {
		g.WriteFile("slipway.yaml", strings.NewReplacer("{{GROUP}}", g.Name, "{{VERSION}}", version, "{{STAMP}}", stamp, "{{FAIL}}", fail).Replace(realMigrationGroup))
	}
	write("1", "v1", "")
	g.MustRun(0, "apply", "--yes")

	write("2", "v2-failed", "1")
	r := g.MustRun(1, "apply", "--yes", "--timeout", "90s")
	if !strings.Contains(r.Stderr, "puts back the copy of /var/lib taken at state version 1") {
		t.Errorf("the failed migration does not say the copy is put back:\n%s", r)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sh := func(script string) string {
		pods := g.roPods("db")
		if len(pods) != 1 {
			return ""
		}
		out, err := exec.CommandContext(ctx, filepath.Join(g.Env.BinDir, "kubectl"), "--kubeconfig", g.Env.Kubeconfig,
			"-n", g.Name, "exec", pods[0].Name, "-c", "node", "--", "/bin/sh", "-c", script).CombinedOutput()
		if err != nil {
			return "exec: " + err.Error() + ": " + string(out)
		}
		return string(out)
	}
	want := "version=1 log=v1 v1 copy=none"
	devtest.WaitFor(t, 2*time.Minute, "db back at version 1 on its restored data", func() (bool, string) {
		got := strings.Join(strings.Fields(sh(`printf 'version=%s log=%s copy=%s' "$(cat /var/lib/.slipway-state/version)" "$(cat /var/lib/data/log)" "$(ls /var/lib/.slipway-state/copy 2>/dev/null || echo none)"`)), " ")
		return got == want, got
	})
	d, err := g.Kube.Clientset.AppsV1().Deployments(g.Name).Get(ctx, "db", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	for _, e := range d.Spec.Template.Spec.InitContainers[0].Env {
		env[e.Name] = e.Value
	}
	if env["SLIPWAY_STATE_VERSION"] != "1" || env["SLIPWAY_STATE_RESTORE"] != "2" {
		t.Errorf("the template set back has state step env %v, want version 1 restoring the hand-over to 2", env)
	}
}
