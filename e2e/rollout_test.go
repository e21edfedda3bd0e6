package e2e

// Issue 7: rollouts that never leave a node down. Each test runs its own group on the dev
// cluster and drives its simulated pod outcomes (SPEC §10) through SLIPWAY_DEV_POD.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"slipway.dev/slipway/internal/devcluster/devtest"
)

// rolloutGroup is a node with a role on the node's image; {{ENV}} is the node's env line and
// {{TIMEOUT}} its rolloutTimeout.
const rolloutGroup = `group: {{GROUP}}
defaults:
  state: {size: 1Gi}
nodes:
  web:
    image: {rootfs: nodes/web/rootfs}
    rolloutTimeout: {{TIMEOUT}}
    {{ENV}}
    firewall: {served: [80]}
    roles:
      worker: {replicas: 2, ports: [8080]}
`

const neverReadyEnv = "env: {SLIPWAY_DEV_POD: never-ready}"

func rolloutFile(timeout, env string) string {
	if env == "" {
		env = "env: {TZ: UTC}"
	}
	return strings.NewReplacer("{{TIMEOUT}}", timeout, "{{ENV}}", env).Replace(rolloutGroup)
}

// roWriteGroupFile rewrites the group file from tmpl ({{GROUP}} replaced).
func (g *Group) roWriteGroupFile(tmpl string) {
	g.t.Helper()
	g.WriteFile("slipway.yaml", strings.ReplaceAll(tmpl, "{{GROUP}}", g.Name))
}

func (g *Group) roDeployment(name string) *appsv1.Deployment {
	g.t.Helper()
	d, err := g.Kube.Clientset.AppsV1().Deployments(g.Name).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		g.t.Fatalf("deployment %s: %v", name, err)
	}
	return d
}

func (g *Group) roClaimUID(node string) string {
	g.t.Helper()
	c, err := g.Kube.Clientset.CoreV1().PersistentVolumeClaims(g.Name).Get(context.Background(), node+"-state", metav1.GetOptions{})
	if err != nil {
		g.t.Fatalf("claim of %s: %v", node, err)
	}
	if c.Status.Phase != corev1.ClaimBound {
		g.t.Fatalf("claim %s: phase %s, want Bound", c.Name, c.Status.Phase)
	}
	return string(c.UID)
}

// pods returns the pods of Deployment name (app.kubernetes.io/name=name).
func (g *Group) roPods(name string) []corev1.Pod {
	g.t.Helper()
	l, err := g.Kube.Clientset.CoreV1().Pods(g.Name).List(context.Background(), metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=" + name})
	if err != nil {
		g.t.Fatal(err)
	}
	return l.Items
}

// roRequireReady fails unless Deployment name has exactly want pods, all Ready, none terminating,
// all of its current template.
func (g *Group) roRequireReady(name string, want int) {
	g.t.Helper()
	d := g.roDeployment(name)
	if got := *d.Spec.Replicas; got != int32(want) {
		g.t.Fatalf("deployment %s: %d replicas, want %d", name, got, want)
	}
	pods := g.roPods(name)
	if len(pods) != want {
		g.t.Fatalf("deployment %s: %d pods, want %d: %v", name, len(pods), want, roPodNames(pods))
	}
	for _, p := range pods {
		if p.DeletionTimestamp != nil || !roPodReady(&p) {
			g.t.Fatalf("deployment %s: pod %s is not ready (phase %s, deleting %v)", name, p.Name, p.Status.Phase, p.DeletionTimestamp != nil)
		}
		if !equality.Semantic.DeepEqual(p.Spec.Containers[0].Env, d.Spec.Template.Spec.Containers[0].Env) ||
			p.Spec.Containers[0].Image != d.Spec.Template.Spec.Containers[0].Image {
			g.t.Fatalf("deployment %s: pod %s is not of the current template", name, p.Name)
		}
	}
}

func roPodReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func roPodNames(pods []corev1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return out
}

func roEnv(c corev1.Container, name string) string {
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value
		}
	}
	return ""
}

// roStateDoc is the part of `state show -o json` the tests read.
type roStateDoc struct {
	State struct {
		Serial int64 `json:"serial"`
		Nodes  map[string]struct {
			MachineID string `json:"machineID"`
			Image     struct {
				Ref    string `json:"ref"`
				Digest string `json:"digest"`
			} `json:"image"`
			PreviousReady string `json:"previousReady"`
			LastRollout   *struct {
				Result  string    `json:"result"`
				Time    time.Time `json:"time"`
				Message string    `json:"message"`
				Digest  string    `json:"digest"`
			} `json:"lastRollout"`
			Roles map[string]struct {
				Replicas int32 `json:"replicas"`
			} `json:"roles"`
			Suspended bool `json:"suspended"`
		} `json:"nodes"`
	} `json:"state"`
}

func (g *Group) roState() roStateDoc {
	g.t.Helper()
	r := g.MustRun(0, "state", "show", "-o", "json")
	var d roStateDoc
	if err := json.Unmarshal([]byte(r.Stdout), &d); err != nil {
		g.t.Fatalf("state show -o json: %v\n%s", err, r.Stdout)
	}
	return d
}

// roStatusDoc is the part of `status -o json` the tests read.
type roStatusDoc struct {
	Group     string `json:"group"`
	Suspended bool   `json:"suspended"`
	Nodes     []struct {
		Node     string `json:"node"`
		Desired  string `json:"desired"`
		Running  string `json:"running"`
		Drift    bool   `json:"drift"`
		Ready    int32  `json:"ready"`
		Replicas int32  `json:"replicas"`
		Phase    string `json:"phase"`
		Roles    []struct {
			Name     string `json:"name"`
			Ready    int32  `json:"ready"`
			Replicas int32  `json:"replicas"`
			Want     int32  `json:"want"`
		} `json:"roles"`
		LastRollout *struct {
			Result  string `json:"result"`
			Digest  string `json:"digest"`
			Message string `json:"message"`
			Summary string `json:"summary"`
		} `json:"lastRollout"`
		Suspended bool `json:"suspended"`
	} `json:"nodes"`
}

func (g *Group) roStatus() roStatusDoc {
	g.t.Helper()
	r := g.MustRun(0, "status", "-o", "json")
	var d roStatusDoc
	if err := json.Unmarshal([]byte(r.Stdout), &d); err != nil {
		g.t.Fatalf("status -o json: not one JSON document: %v\n%s", err, r.Stdout)
	}
	return d
}

// roApplyFails runs apply, wants exit 1 and returns the run and how long it took.
func (g *Group) roApplyFails() (Result, time.Duration) {
	g.t.Helper()
	start := time.Now()
	r := g.MustRun(1, "apply", "--yes")
	return r, time.Since(start)
}

func TestRolloutNeverReadyRollsBack(t *testing.T) {
	t.Parallel()
	g := NewGroup(t, "ro-never", rolloutFile("20s", ""), "web")
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

	g.roWriteGroupFile(rolloutFile("20s", neverReadyEnv))
	r, took := g.roApplyFails()
	t.Logf("failed apply took %s", took)
	if took < 20*time.Second || took > 50*time.Second {
		t.Errorf("the failed apply took %s, want about 20 s (the rolloutTimeout) plus the way back", took)
	}
	wantErr := regexp.MustCompile(`(?m)^error: node web: deployment web: rollout failed: NotReady: pod web-\S+: container node: did not become ready within 20s: .+; rolled back to ` + regexp.QuoteMeta(digest) + `$`)
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
	wantLine := regexp.MustCompile(`(?m)^  web: rolled back to ` + regexp.QuoteMeta(digest) + ` at \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ: NotReady: pod web-\S+: container node: did not become ready within 20s: .+$`)
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
	g.roWriteGroupFile(rolloutFile("20s", ""))
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

	// The next apply with a good file rolls out and starts the roles.
	g.roWriteGroupFile(rolloutFile("10s", ""))
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
    rolloutTimeout: 15s
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

func TestSuspendResume(t *testing.T) {
	t.Parallel()
	g := NewGroup(t, "ro-suspend", helloGroup, "web", "db")
	g.MustRun(0, "apply", "--yes")
	deps := []string{"web", "web-worker", "db"}
	want := map[string]int{"web": 1, "web-worker": 2, "db": 1}
	templates := map[string]corev1.PodTemplateSpec{}
	for _, d := range deps {
		g.roRequireReady(d, want[d])
		templates[d] = g.roDeployment(d).Spec.Template
	}
	digests := map[string]string{}
	for n, s := range g.roState().State.Nodes {
		digests[n] = s.Image.Digest
	}

	// Watch the claims the whole time: they must stay Bound.
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var mu sync.Mutex
	var unbound []string
	checks := 0
	wg.Go(func() {
		for ctx.Err() == nil {
			l, err := g.Kube.Clientset.CoreV1().PersistentVolumeClaims(g.Name).List(ctx, metav1.ListOptions{})
			mu.Lock()
			if err == nil {
				checks++
				if len(l.Items) != 2 {
					unbound = append(unbound, fmt.Sprintf("%d claims, want 2", len(l.Items)))
				}
				for _, c := range l.Items {
					if c.Status.Phase != corev1.ClaimBound || c.DeletionTimestamp != nil {
						unbound = append(unbound, c.Name+": "+string(c.Status.Phase))
					}
				}
			}
			mu.Unlock()
			select {
			case <-ctx.Done():
			case <-time.After(200 * time.Millisecond):
			}
		}
	})

	g.MustRun(0, "suspend", "--yes")
	for _, d := range deps {
		if got := *g.roDeployment(d).Spec.Replicas; got != 0 {
			t.Errorf("deployment %s: %d replicas while suspended, want 0", d, got)
		}
	}
	pods, err := g.Kube.Clientset.CoreV1().Pods(g.Name).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 0 {
		t.Errorf("%d pods while suspended, want 0: %v", len(pods.Items), roPodNames(pods.Items))
	}
	p := g.MustRun(0, "plan", "--detailed-exitcode")
	if !strings.Contains(p.Stdout, "Group "+g.Name+" is suspended: its Deployments stay at 0 replicas until `slipway resume`.") ||
		!strings.Contains(p.Stdout, "No changes.") || strings.Contains(p.Stdout, "drift") {
		t.Errorf("plan while suspended: want the group shown as suspended and no changes:\n%s", p)
	}
	s := g.roStatus()
	if !s.Suspended {
		t.Errorf("status -o json while suspended: suspended = false")
	}
	for _, n := range s.Nodes {
		if !n.Suspended || n.Ready != 0 || n.Replicas != 0 {
			t.Errorf("status while suspended: node %s: %+v", n.Node, n)
		}
	}

	g.MustRun(0, "resume", "--yes")
	cancel()
	wg.Wait()
	mu.Lock()
	if checks < 3 || len(unbound) > 0 {
		t.Errorf("claims during suspend and resume (%d checks): not Bound: %v", checks, unbound)
	}
	mu.Unlock()
	for _, d := range deps {
		g.roRequireReady(d, want[d])
		if diff := cmp.Diff(templates[d], g.roDeployment(d).Spec.Template); diff != "" {
			t.Errorf("deployment %s after resume: template differs (-before +after):\n%s", d, diff)
		}
	}
	for n, s := range g.roState().State.Nodes {
		if s.Image.Digest != digests[n] || s.Suspended {
			t.Errorf("state after resume: node %s: digest %s (was %s), suspended %v", n, s.Image.Digest, digests[n], s.Suspended)
		}
	}
	p = g.MustRun(0, "plan", "--detailed-exitcode")
	if strings.Contains(p.Stdout, "suspended") {
		t.Errorf("plan after resume still says suspended:\n%s", p)
	}
}

const twoNodes = `group: {{GROUP}}
defaults:
  state: {size: 1Gi}
  rolloutTimeout: 10s
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

// TestRolloutKilledRolesWaitForTheNode: an apply killed while its node's new pod was not ready
// yet leaves the node's Deployment as desired, its roles stopped and the rollout in flight in
// the state. The next apply follows that rollout as an uninterrupted apply would: it rolls it
// back when it fails, and never starts the roles next to a node that is not ready (SPEC §6
// step 7: roles start after a successful rollout).
func TestRolloutKilledRolesWaitForTheNode(t *testing.T) {
	t.Parallel()
	g := NewGroup(t, "ro-killed", rolloutFile("5m", ""), "web")
	g.MustRun(0, "apply", "--yes")
	roleTemplate := g.roDeployment("web-worker").Spec.Template

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := g.applyIntoNeverReady(ctx, nil)
	g.roAwaitUnreadyPod("web")
	g.killAndUnlock(cmd)

	r := g.MustRun(1, "apply", "--yes", "--timeout", "10s")
	wantErr := regexp.MustCompile(`(?m)^error: node web: deployment web: rollout failed: NotReady: pod web-\S+: container node: did not become ready within 10s: .+; rolled back to sha256:[0-9a-f]{64}$`)
	if !wantErr.MatchString(r.Stderr) {
		t.Errorf("apply after the kill: want the error %s:\n%s", wantErr, r)
	}
	role := g.roDeployment("web-worker")
	if *role.Spec.Replicas != 0 || len(g.roPods("web-worker")) != 0 {
		t.Errorf("role worker: %d replicas, pods %v: want it stopped", *role.Spec.Replicas, roPodNames(g.roPods("web-worker")))
	}
	if diff := cmp.Diff(roleTemplate, role.Spec.Template); diff != "" {
		t.Errorf("role worker: its template changed next to a node that is not ready (-before +after):\n%s", diff)
	}
	if st := g.roState().State.Nodes["web"]; st.LastRollout == nil || st.LastRollout.Result != "rolled-back" || !strings.HasPrefix(st.LastRollout.Message, "NotReady: pod web-") {
		t.Errorf("state: last rollout %+v, want rolled-back with the reason", st.LastRollout)
	}
	g.roRequireReady("web", 1)

	// A good file again: the node rolls out and the roles start.
	g.roWriteGroupFile(rolloutFile("5m", ""))
	g.MustRun(0, "apply", "--yes")
	g.roRequireReady("web", 1)
	g.roRequireReady("web-worker", 2)
}

// An apply killed during a rollout that never becomes ready leaves a live template that was
// never ready; a later bad change must still go back to the last template that was, kept in
// its ReplicaSet, not fail with nothing to roll back to.
func TestRolloutAfterKillRollsBackToLastReady(t *testing.T) {
	t.Parallel()
	g := NewGroup(t, "ro-lastready", rolloutFile("5m", ""), "web")
	g.MustRun(0, "apply", "--yes")
	good := g.roDeployment("web").Spec.Template

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := g.applyIntoNeverReady(ctx, nil)
	g.roAwaitUnreadyPod("web")
	g.killAndUnlock(cmd)

	g.roWriteGroupFile(rolloutFile("5m", "env: {SLIPWAY_DEV_POD: crashloop}"))
	r := g.MustRun(1, "apply", "--yes")
	if !strings.Contains(r.Stderr, "CrashLoopBackOff") || !strings.Contains(r.Stderr, "rolled back to sha256:") {
		t.Fatalf("apply of a bad change after the kill: want a rollback naming CrashLoopBackOff:\n%s", r)
	}
	if d := cmp.Diff(good, g.roDeployment("web").Spec.Template); d != "" {
		t.Errorf("web: not back on the last ready template (-want +got):\n%s", d)
	}
	g.roRequireReady("web", 1)
}

// applyIntoNeverReady writes the never-ready file, starts `apply --yes` and returns once the
// web Deployment has the never-ready template and its roles are stopped: the moment an
// operator's Ctrl-C or a crash lands in a rollout that will not finish by itself.
func (g *Group) applyIntoNeverReady(ctx context.Context, stderr io.Writer) *exec.Cmd {
	g.t.Helper()
	g.roWriteGroupFile(rolloutFile("5m", neverReadyEnv))
	cmd := g.Command(ctx, "apply", "--yes")
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		g.t.Fatal(err)
	}
	limit := 2 * time.Minute
	if dl, ok := ctx.Deadline(); ok {
		limit = time.Until(dl)
	}
	devtest.WaitFor(g.t, limit, "the apply applies the never-ready template and stops the roles", func() (bool, string) {
		env := roEnv(g.roDeployment("web").Spec.Template.Spec.Containers[0], "SLIPWAY_DEV_POD")
		replicas := *g.roDeployment("web-worker").Spec.Replicas
		return env == "never-ready" && replicas == 0, fmt.Sprintf("web SLIPWAY_DEV_POD=%q, web-worker replicas %d", env, replicas)
	})
	return cmd
}

// roAwaitUnreadyPod waits until Deployment name has a pod of its current template that runs
// and is not ready: the rollout is under way and will not finish by itself.
func (g *Group) roAwaitUnreadyPod(name string) {
	g.t.Helper()
	devtest.WaitFor(g.t, time.Minute, "deployment "+name+": a running, unready pod of the new template", func() (bool, string) {
		env := roEnv(g.roDeployment(name).Spec.Template.Spec.Containers[0], "SLIPWAY_DEV_POD")
		var seen []string
		for _, p := range g.roPods(name) {
			podEnv := roEnv(p.Spec.Containers[0], "SLIPWAY_DEV_POD")
			if podEnv == env && p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning && !roPodReady(&p) {
				return true, ""
			}
			seen = append(seen, fmt.Sprintf("%s %s %s ready=%v", p.Name, podEnv, p.Status.Phase, roPodReady(&p)))
		}
		return false, fmt.Sprintf("pods %v", seen)
	})
}

// killAndUnlock kills an apply as SIGKILL would and removes the lock it leaves, as an
// operator does with `state unlock`.
func (g *Group) killAndUnlock(cmd *exec.Cmd) {
	g.t.Helper()
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if l := g.State().Lock; l != nil {
		g.MustRun(0, "state", "unlock", l.ID)
	}
}
