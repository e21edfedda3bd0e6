package e2e

// Issue 7: the helpers the rollout tests (and others) share: the rollout group file, and
// reading a group's Deployments, pods, state and status.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
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

// neverReadyLimit is the rollout limit (--timeout, rolloutTimeout) of a run with a template
// that never becomes ready, where the test checks that what else the run does within the same
// limit ran ready: the rollback (lane.SetBack waits for it with the rollout's limit: the error
// ends "rolled back to <digest>", the node is Ready, the state records it), another node's
// rollout, a role's. Each is a ReplicaSet whose pod must be created, scheduled and ready (and
// the one it replaces gone) within it: about 2 s here with few tests running (the failed apply
// of TestRolloutNeverReadyRollsBack took 32 s at this 30 s limit), over 5 s on the loaded
// 2-core CI machine (TestMigrationKilled's rollback at 5 s); 10 s left too little room.
const neverReadyLimit = "30s"

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
