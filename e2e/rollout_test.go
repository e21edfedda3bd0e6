package e2e

// Issue 7: rollouts that never leave a node down. Each test runs its own group on the dev
// cluster and drives its simulated pod outcomes (SPEC §10) through SLIPWAY_DEV_POD.

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestRolloutNeverReadyRollsBack(t *testing.T) {
	t.Parallel()
	g := NewGroup(t, "ro-never", rolloutFile(neverReadyLimit, ""), "web")
	g.MustRun(0, "apply", "--yes")
	g.roRequireReady("web", 1)
	g.roRequireReady("web-worker", 2)
	before := g.roDeployment("web")
	claim := g.roClaimUID("web")
	machineID := roEnv(before.Spec.Template.Spec.Containers[0], "container_uuid")
	good := g.roState().State.Nodes["web"]
	if good.LastRollout == nil || good.LastRollout.Result != "ready" || machineID == "" {
		t.Fatalf("after the first apply: last rollout %+v, machine ID %q", good.LastRollout, machineID)
	}
	digest := good.Image.Digest

	g.roWriteGroupFile(rolloutFile(neverReadyLimit, neverReadyEnv))
	r, took := g.roApplyFails()
	t.Logf("failed apply took %s", took)
	limit, err := time.ParseDuration(neverReadyLimit)
	if err != nil {
		t.Fatal(err)
	}
	if took < limit || took > limit+30*time.Second {
		t.Errorf("the failed apply took %s, want about %s (the rolloutTimeout) plus the way back", took, limit)
	}
	wantErr := regexp.MustCompile(`(?m)^error: node web: deployment web: rollout failed: NotReady: pod web-\S+: container node: did not become ready within ` + neverReadyLimit + `: .+; rolled back to ` + regexp.QuoteMeta(digest) + `$`)
	if !wantErr.MatchString(r.Stderr) {
		t.Errorf("apply output lacks the error %s:\n%s", wantErr, r)
	}

	// The previous template runs again, ready, on the same claim with the same machine ID.
	after := g.roDeployment("web")
	if diff := cmp.Diff(before.Spec.Template, after.Spec.Template); diff != "" {
		t.Errorf("deployment web after the rollback: template differs from before (-before +after):\n%s", diff)
	}
	g.roRequireReady("web", 1)
	if got := roEnv(g.roPods("web")[0].Spec.Containers[0], "SLIPWAY_DEV_POD"); got != "" {
		t.Errorf("the pod after the rollback has SLIPWAY_DEV_POD=%s", got)
	}
	if got := g.roClaimUID("web"); got != claim {
		t.Errorf("claim web-state: UID %s, want %s (unchanged)", got, claim)
	}
	if got := roEnv(after.Spec.Template.Spec.Containers[0], "container_uuid"); got != machineID {
		t.Errorf("machine ID: %s, want %s (unchanged)", got, machineID)
	}
	g.roRequireReady("web-worker", 0)

	// The state keeps the new template as desired and says it rolled back.
	st := g.roState().State.Nodes["web"]
	if st.LastRollout == nil || st.LastRollout.Result != "rolled-back" || st.LastRollout.Digest != digest ||
		!strings.HasPrefix(st.LastRollout.Message, "NotReady: pod web-") {
		t.Errorf("state: last rollout %+v, want rolled-back to %s with the reason", st.LastRollout, digest)
	}

	// plan shows the pending rollout.
	p := g.MustRun(2, "plan", "--detailed-exitcode")
	for _, want := range []string{"! node web: rollout pending: the last rollout was rolled back (", "~   update   Deployment " + g.Name + "/web\n", "~ spec.template.spec.containers[0].env[2].name: TZ -> SLIPWAY_DEV_POD\n", "~ spec.template.spec.containers[0].env[2].value: UTC -> never-ready\n", "~ spec.replicas: 0 -> 2\n"} {
		if !strings.Contains(p.Stdout, want) {
			t.Errorf("plan after the rollback lacks %q:\n%s", want, p)
		}
	}

	// status says the same, as text and as JSON.
	s := g.MustRun(0, "status")
	wantLine := regexp.MustCompile(`(?m)^  web: rolled back to ` + regexp.QuoteMeta(digest) + ` at \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ: NotReady: pod web-\S+: container node: did not become ready within ` + neverReadyLimit + `: .+$`)
	if !wantLine.MatchString(s.Stdout) {
		t.Errorf("status lacks the rollback line %s:\n%s", wantLine, s)
	}
	if !regexp.MustCompile(`(?m)^web\s+sha256:[0-9a-f]{12}\s+sha256:[0-9a-f]{12}\s+1/1\s+ready\s+worker 0/0 \(stopped, wants 2\)\s+no$`).MatchString(s.Stdout) {
		t.Errorf("status: no row for web with 1/1 ready and worker stopped:\n%s", s)
	}
	js := g.roStatus()
	if len(js.Nodes) != 1 || js.Nodes[0].LastRollout == nil {
		t.Fatalf("status -o json: %+v", js)
	}
	n := js.Nodes[0]
	if n.Desired != digest || n.Running != digest || n.Ready != 1 || n.Replicas != 1 || n.Phase != "ready" ||
		n.LastRollout.Result != "rolled-back" || n.LastRollout.Digest != digest ||
		!strings.HasPrefix(n.LastRollout.Summary, "rolled back to "+digest+" at ") ||
		!strings.HasSuffix(n.LastRollout.Summary, ": "+n.LastRollout.Message) ||
		len(n.Roles) != 1 || n.Roles[0].Name != "worker" || n.Roles[0].Replicas != 0 || n.Roles[0].Want != 2 {
		t.Errorf("status -o json after the rollback: %+v", n)
	}

	// Reverting the file and applying brings the roles back.
	g.roWriteGroupFile(rolloutFile(neverReadyLimit, ""))
	g.MustRun(0, "apply", "--yes")
	g.roRequireReady("web", 1)
	g.roRequireReady("web-worker", 2)
	if diff := cmp.Diff(before.Spec.Template, g.roDeployment("web").Spec.Template); diff != "" {
		t.Errorf("deployment web after the revert: template differs (-before +after):\n%s", diff)
	}
	g.MustRun(0, "plan", "--detailed-exitcode")
}

func TestRolloutFailsFastAndRollsBack(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		outcome string
		reason  *regexp.Regexp
	}{
		{"crashloop", regexp.MustCompile(`CrashLoopBackOff`)},
		{"pull-error", regexp.MustCompile(`ErrImagePull|ImagePullBackOff`)},
	} {
		t.Run(tc.outcome, func(t *testing.T) {
			t.Parallel()
			g := NewGroup(t, "ro-"+tc.outcome, rolloutFile("5m", ""), "web")
			g.MustRun(0, "apply", "--yes")
			before := g.roDeployment("web")
			digest := g.roState().State.Nodes["web"].Image.Digest

			g.roWriteGroupFile(rolloutFile("5m", "env: {SLIPWAY_DEV_POD: "+tc.outcome+"}"))
			r, took := g.roApplyFails()
			t.Logf("failed apply took %s", took)
			if took >= 60*time.Second {
				t.Errorf("the failed apply took %s, want under 60 s with a 5m rolloutTimeout", took)
			}
			wantErr := regexp.MustCompile(`(?m)^error: node web: deployment web: rollout failed: (` + tc.reason.String() + `): pod web-\S+: container node: .+; rolled back to ` + regexp.QuoteMeta(digest) + `$`)
			if !wantErr.MatchString(r.Stderr) {
				t.Errorf("apply output lacks the error %s:\n%s", wantErr, r)
			}
			if diff := cmp.Diff(before.Spec.Template, g.roDeployment("web").Spec.Template); diff != "" {
				t.Errorf("template after the rollback differs (-before +after):\n%s", diff)
			}
			g.roRequireReady("web", 1)
			g.roRequireReady("web-worker", 0)

			st := g.roState().State.Nodes["web"]
			if st.LastRollout == nil || st.LastRollout.Result != "rolled-back" || st.LastRollout.Digest != digest ||
				!regexp.MustCompile(`^(`+tc.reason.String()+`): pod web-`).MatchString(st.LastRollout.Message) {
				t.Errorf("state: last rollout %+v, want rolled-back naming %s", st.LastRollout, tc.reason)
			}
			s := g.MustRun(0, "status")
			if !regexp.MustCompile(`(?m)^  web: rolled back to ` + regexp.QuoteMeta(digest) + ` at \S+: (` + tc.reason.String() + `): `).MatchString(s.Stdout) {
				t.Errorf("status lacks the rollback with its reason:\n%s", s)
			}
		})
	}
}

func TestRolloutFirstDeployNeverReady(t *testing.T) {
	t.Parallel()
	g := NewGroup(t, "ro-first", rolloutFile("10s", neverReadyEnv), "web")
	r, took := g.roApplyFails()
	t.Logf("failed apply took %s", took)
	if took < 10*time.Second || took > 40*time.Second {
		t.Errorf("the failed first apply took %s, want about 10 s", took)
	}
	wantErr := regexp.MustCompile(`(?m)^error: node web: deployment web: rollout failed: NotReady: pod web-\S+: container node: did not become ready within 10s: .+; nothing to roll back to \(no earlier template became ready\)$`)
	if !wantErr.MatchString(r.Stderr) || strings.Contains(r.Stderr, "rolled back to") {
		t.Errorf("apply output does not say that there is nothing to roll back to:\n%s", r)
	}
	st := g.roState().State.Nodes["web"]
	if st.LastRollout == nil || st.LastRollout.Result != "failed" || st.PreviousReady != "" {
		t.Errorf("state: last rollout %+v, previous ready %q: want failed with nothing before", st.LastRollout, st.PreviousReady)
	}
	// The roles never started: they come after the node's rollout.
	if _, err := g.Kube.Clientset.AppsV1().Deployments(g.Name).Get(context.Background(), "web-worker", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("deployment web-worker: want none after a failed first rollout, got err %v", err)
	}
	if pods := g.roPods("web-worker"); len(pods) != 0 {
		t.Errorf("role worker: pods %v, want none", roPodNames(pods))
	}
	s := g.MustRun(0, "status")
	if !regexp.MustCompile(`(?m)^  web: failed sha256:[0-9a-f]{64} at \S+, with nothing to roll back to: NotReady: pod web-`).MatchString(s.Stdout) {
		t.Errorf("status lacks the failed first rollout:\n%s", s)
	}

	// The same file again: plan does not call it done, and apply follows the rollout again,
	// fails the same way, and starts no role next to a node that is not ready.
	g.MustRun(2, "plan", "--detailed-exitcode")
	r, _ = g.roApplyFails()
	if !wantErr.MatchString(r.Stderr) {
		t.Errorf("second apply: want the error %s:\n%s", wantErr, r)
	}
	if pods := g.roPods("web-worker"); len(pods) != 0 {
		t.Errorf("role worker after the second failed apply: pods %v, want none", roPodNames(pods))
	}

	// The next apply with a good file rolls out and starts the roles, within 5m: 10 s, the
	// never-ready template's limit, leaves them little room on a loaded machine.
	g.roWriteGroupFile(rolloutFile("5m", ""))
	g.MustRun(0, "apply", "--yes")
	g.roRequireReady("web", 1)
	g.roRequireReady("web-worker", 2)
	if st := g.roState().State.Nodes["web"]; st.LastRollout == nil || st.LastRollout.Result != "ready" {
		t.Errorf("state after the good apply: last rollout %+v, want ready", st.LastRollout)
	}
}

// roleGroup is a node with a service role whose image is an archive; {{ENV}} is the service's
// environment.
const roleGroup = `group: {{GROUP}}
defaults:
  state: {size: 1Gi}
nodes:
  web:
    image: {rootfs: nodes/web/rootfs}
    rolloutTimeout: ` + neverReadyLimit + `
    firewall: {served: [80]}
    roles:
      sso:
        replicas: 1
        ports: [9091]
        service:
          image: {archive: build/sso.tar, user: "65532"}
          environment: {{ENV}}
`

func TestRolloutRoleNeverReady(t *testing.T) {
	t.Parallel()
	file := func(env string) string { return strings.ReplaceAll(roleGroup, "{{ENV}}", env) }
	g := NewGroup(t, "ro-role", file("{LOG_LEVEL: info}"), "web")
	img, err := random.Image(512, 1)
	if err != nil {
		t.Fatal(err)
	}
	tag, err := name.NewTag("example.org/sso:e2e")
	if err != nil {
		t.Fatal(err)
	}
	g.WriteFile("build/.keep", "")
	if err := tarball.WriteToFile(filepath.Join(g.Dir, "build", "sso.tar"), tag, img); err != nil {
		t.Fatal(err)
	}
	g.MustRun(0, "apply", "--yes")
	g.roRequireReady("web", 1)
	g.roRequireReady("web-sso", 1)
	first := g.roState().State.Nodes["web"].Image.Digest

	// A new node image, and a service that never becomes ready.
	g.WriteFile("nodes/web/rootfs/etc/motd", "v2\n")
	g.roWriteGroupFile(file("{LOG_LEVEL: info, SLIPWAY_DEV_POD: never-ready}"))
	r, took := g.roApplyFails()
	t.Logf("failed apply took %s", took)
	if !strings.Contains(r.Stderr, "node web: role sso did not become ready (") ||
		!strings.Contains(r.Stderr, "it is back at 0 replicas, the node keeps its new image, and the next apply starts it again") {
		t.Errorf("apply output does not name the failed role:\n%s", r)
	}
	st := g.roState().State.Nodes["web"]
	if st.Image.Digest == first || st.LastRollout == nil || st.LastRollout.Result != "ready" || st.LastRollout.Digest != st.Image.Digest {
		t.Errorf("state: image %s (first %s), last rollout %+v: want the new image rolled out", st.Image.Digest, first, st.LastRollout)
	}
	if got := g.roDeployment("web").Spec.Template.Spec.Containers[0].Image; got != st.Image.Ref+"@"+st.Image.Digest {
		t.Errorf("deployment web runs %s, want the new image %s@%s", got, st.Image.Ref, st.Image.Digest)
	}
	g.roRequireReady("web", 1)
	g.roRequireReady("web-sso", 0)

	// The next good apply starts the role.
	g.roWriteGroupFile(file("{LOG_LEVEL: info}"))
	g.MustRun(0, "apply", "--yes")
	g.roRequireReady("web", 1)
	g.roRequireReady("web-sso", 1)
	if got := roEnv(g.roDeployment("web-sso").Spec.Template.Spec.Containers[0], "SLIPWAY_DEV_POD"); got != "" {
		t.Errorf("web-sso still has SLIPWAY_DEV_POD=%s", got)
	}
	g.MustRun(0, "plan", "--detailed-exitcode")
}

// twoNodes is two nodes, b's env {{ENV}}: a's rollout and b's rollback must run ready within
// the limit of b's never-ready template.
const twoNodes = `group: {{GROUP}}
defaults:
  state: {size: 1Gi}
  rolloutTimeout: ` + neverReadyLimit + `
nodes:
  a:
    image: {rootfs: nodes/a/rootfs}
  b:
    image: {rootfs: nodes/b/rootfs}
    {{ENV}}
`

func TestRolloutTwoNodesOneFails(t *testing.T) {
	t.Parallel()
	g := NewGroup(t, "ro-two", strings.ReplaceAll(twoNodes, "{{ENV}}", ""), "a", "b")
	g.MustRun(0, "apply", "--yes")
	first := g.roState().State.Nodes

	// a: a new image that works; b: a new image that never becomes ready.
	g.WriteFile("nodes/a/rootfs/etc/motd", "v2\n")
	g.WriteFile("nodes/b/rootfs/etc/motd", "v2\n")
	g.roWriteGroupFile(strings.ReplaceAll(twoNodes, "{{ENV}}", neverReadyEnv))
	start := time.Now().Add(-time.Second).UTC()
	r, _ := g.roApplyFails()
	if !strings.Contains(r.Stderr, "\nerror: node b: deployment b: rollout failed: NotReady: pod b-") || strings.Contains(r.Stderr, "error: node a:") ||
		!regexp.MustCompile(`(?m)^\d\d:\d\d:\d\d a +done`).MatchString(r.Stderr) {
		t.Errorf("apply output: want only node b failed:\n%s", r)
	}
	st := g.roState().State.Nodes
	a := st["a"]
	if a.Image.Digest == first["a"].Image.Digest || a.LastRollout == nil || a.LastRollout.Result != "ready" ||
		a.LastRollout.Digest != a.Image.Digest || a.LastRollout.Time.Before(start) || a.PreviousReady != a.Image.Ref+"@"+a.Image.Digest {
		t.Errorf("state of node a: %+v (first digest %s), last rollout %+v: want the new image rolled out and recorded", a, first["a"].Image.Digest, a.LastRollout)
	}
	if got := g.roDeployment("a").Spec.Template.Spec.Containers[0].Image; got != a.Image.Ref+"@"+a.Image.Digest {
		t.Errorf("deployment a runs %s, want %s@%s", got, a.Image.Ref, a.Image.Digest)
	}
	g.roRequireReady("a", 1)
	g.roRequireReady("b", 1)
	if b := st["b"]; b.LastRollout == nil || b.LastRollout.Result != "rolled-back" || b.LastRollout.Digest != first["b"].Image.Digest {
		t.Errorf("state of node b: last rollout %+v, want rolled-back to %s", b.LastRollout, first["b"].Image.Digest)
	}
	b := st["b"]
	if b.Image.Digest == first["b"].Image.Digest {
		t.Fatalf("state of node b: digest %s unchanged: want the new image as desired", b.Image.Digest)
	}
	p := g.MustRun(2, "plan", "--detailed-exitcode")
	if want := "! node b drifted: runs " + b.Image.Ref + "@" + first["b"].Image.Digest + ", the state wants " + b.Image.Ref + "@" + b.Image.Digest + "\n    the last rollout was rolled back (NotReady: pod b-"; !strings.Contains(p.Stdout, want) {
		t.Errorf("plan after b rolled back lacks %q:\n%s", want, p)
	}
	if js := g.roStatus(); len(js.Nodes) != 2 || js.Nodes[0].Drift || !js.Nodes[1].Drift || js.Nodes[1].Running != first["b"].Image.Digest || js.Nodes[1].Desired != b.Image.Digest {
		t.Errorf("status -o json after b rolled back: %+v", js.Nodes)
	}

	// b reverted in the file: the cluster already runs it; apply changes nothing in the
	// cluster, brings the state up to date, and then nothing is left to show.
	if err := os.Remove(filepath.Join(g.Dir, "nodes/b/rootfs/etc/motd")); err != nil {
		t.Fatal(err)
	}
	g.roWriteGroupFile(strings.ReplaceAll(twoNodes, "{{ENV}}", ""))
	if r := g.MustRun(0, "apply", "--yes"); r.Stdout != "No changes.\n" {
		t.Errorf("apply of the reverted file: want No changes., got %s", r)
	}
	if p := g.MustRun(0, "plan", "--detailed-exitcode"); p.Stdout != "No changes.\n" {
		t.Errorf("plan after the revert: want only No changes., got %s", p)
	}
	if got := g.roState().State.Nodes["b"].Image.Digest; got != first["b"].Image.Digest {
		t.Errorf("state of node b after the revert: digest %s, want %s (what runs)", got, first["b"].Image.Digest)
	}
	if js := g.roStatus(); len(js.Nodes) != 2 || js.Nodes[1].Drift {
		t.Errorf("status -o json after the revert: %+v", js.Nodes)
	}
}
