package e2e

import (
	"context"
	"strings"
	"testing"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const quoteGroup = `group: {{GROUP}}
nodes:
  solo:
    image: {rootfs: nodes/solo/rootfs}
    init: none
    env: {GREETING: ok}
`

// TestPlanQuotesLiveValues (issue 43 item 11): someone sets a live env value that erases the
// line above and writes a fake `No changes.`; plan --no-color shows the diff with every such
// byte quoted (it printed them raw), and nothing else it prints carries one.
func TestPlanQuotesLiveValues(t *testing.T) {
	t.Parallel()
	g := NewGroup(t, "qplan", quoteGroup, "solo")
	g.MustRun(0, "apply", "--yes")
	const hostile = "ok\x1b[2K\x1b[1A\x1b[32mNo changes.\r\a\u009b2K"
	ctx := context.Background()
	deps := g.Kube.Clientset.AppsV1().Deployments(g.Name)
	d, err := deps.Get(ctx, "solo", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	env := d.Spec.Template.Spec.Containers[0].Env
	set := false
	for i := range env {
		if env[i].Name == "GREETING" {
			env[i].Value, set = hostile, true
		}
	}
	if !set {
		t.Fatalf("the live Deployment has no GREETING: %+v", env)
	}
	if _, err := deps.Update(ctx, d, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	r := g.MustRun(2, "plan", "--no-color", "--detailed-exitcode")
	if want := `.value: ok\x1b[2K\x1b[1A\x1b[32mNo changes.\r\x07\u009b2K -> ok`; !strings.Contains(r.Stdout, want) {
		t.Errorf("plan does not show the live value quoted (%s):\n%s", want, r)
	}
	for name, out := range map[string]string{"stdout": r.Stdout, "stderr": r.Stderr} {
		for i, c := range out {
			if c == utf8.RuneError || c < 0x20 && c != '\n' || c == 0x7f || c >= 0x80 && c <= 0x9f {
				t.Errorf("plan's %s carries %q at byte %d:\n%s", name, c, i, out)
				break
			}
		}
	}
}
