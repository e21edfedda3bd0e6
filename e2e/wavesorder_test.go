package e2e

// Issue 46 item 7: two waves files listing the same groups in other orders never deadlock,
// and a dependency that goes down while its dependent rolls out fails the run.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"slipway.dev/slipway/internal/state"
)

// holdLock takes the lock of the state of group name as another run would, and returns what
// releases it.
func (g *Group) holdLock(name string) func() {
	g.t.Helper()
	loc := g.stateOf(name).Location
	if rest, ok := strings.CutPrefix(loc, "file://"); ok && !filepath.IsAbs(rest) {
		loc = "file://" + filepath.Join(g.Dir, rest) // relative to the runs' directory
	}
	ctx := context.Background()
	b, err := state.Open(ctx, loc, name, nil)
	if err != nil {
		g.t.Fatal(err)
	}
	id, err := b.Lock(ctx, state.NewInfo("e2e hold"))
	if err != nil {
		g.t.Fatalf("hold the lock of %s: %v", name, err)
	}
	return func() {
		if err := b.Unlock(ctx, id); err != nil {
			g.t.Errorf("release the lock of %s: %v", name, err)
		}
	}
}

// started is a slipway run in the background: its stderr is read until a line says it waits.
type started struct {
	cmd  *exec.Cmd
	out  bytes.Buffer
	name string
}

func (g *Group) startWaiting(ctx context.Context, name, waitsFor string, args ...string) *started {
	g.t.Helper()
	s := &started{cmd: g.Command(ctx, args...), name: name}
	s.cmd.Stdout = &s.out
	stderr, err := s.cmd.StderrPipe()
	if err != nil {
		g.t.Fatal(err)
	}
	if err := s.cmd.Start(); err != nil {
		g.t.Fatal(err)
	}
	waitForLine(g.t, stderr, func(line string) bool {
		return strings.Contains(line, "state "+waitsFor+" is locked by") && strings.Contains(line, "waiting up to")
	}, fmt.Sprintf("run %s: no word that it waits for the lock of %s", name, waitsFor))
	return s
}

// TestWavesOppositeOrders: waves file A lists x, y, z; file B lists z, x, y. A takes x and
// waits for y (held here); B, started then, waits for x. In file order B took z first, so
// once y was free A waited for z and B for x: both failed with exit code 3 when their lock
// timeout ran out. In one global order B holds nothing while it waits: A runs, then B.
func TestWavesOppositeOrders(t *testing.T) {
	t.Parallel()
	g := NewGroup(t, "wo", "group: unused\nnodes: {}\n")
	names := map[string]string{}
	for _, dir := range []string{"x", "y", "z"} {
		names[dir] = g.Name + "-" + dir // group, namespace and state; sorted as x, y, z
	}
	g.dropNamespaces(names["x"], names["y"], names["z"])
	write := func(trial int) {
		for dir, name := range names {
			g.WriteFile(dir+"/slipway.yaml", strings.NewReplacer("{{NAME}}", name, "{{TRIAL}}", fmt.Sprint(trial), "{{ENV}}", "").Replace(lockGroup))
			g.WriteFile(dir+"/nodes/web/rootfs/etc/hostname", "web\n")
		}
	}
	g.WriteFile("a.yaml", "groups:\n  - {name: x, file: x/slipway.yaml}\n  - {name: y, file: y/slipway.yaml}\n  - {name: z, file: z/slipway.yaml}\n")
	g.WriteFile("b.yaml", "groups:\n  - {name: z, file: z/slipway.yaml}\n  - {name: x, file: x/slipway.yaml}\n  - {name: y, file: y/slipway.yaml}\n")
	write(1)
	g.MustRun(0, "apply", "-f", "a.yaml", "--yes")
	write(2)

	release := g.holdLock(names["y"])
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	// The timeout ends a deadlock; A and B need far less to run one after the other.
	a := g.startWaiting(ctx, "A", names["y"], "apply", "-f", "a.yaml", "--yes", "--lock-timeout", "90s")
	b := g.startWaiting(ctx, "B", names["x"], "apply", "-f", "b.yaml", "--yes", "--lock-timeout", "90s")
	if v := g.stateOf(names["z"]).Lock; v != nil {
		t.Errorf("run B waits for x and holds z's lock (%s): a lock taken out of the global order", v.Info)
	}
	release()
	for _, s := range []*started{a, b} {
		if err := s.cmd.Wait(); err != nil {
			t.Errorf("run %s: %v\nstdout:\n%s", s.name, err, s.out.String())
		}
	}
	if out := a.out.String(); strings.Count(out, ": Apply complete") != 3 {
		t.Errorf("run A's outcome: want every group applied, got\n%s", out)
	}
	if out := b.out.String(); strings.Count(out, ": No changes.") != 3 {
		t.Errorf("run B's outcome: want nothing left to change after A, got\n%s", out)
	}
	for _, name := range names {
		if env := deploymentEnv(t, g, name, "web", "TRIAL"); env != "2" {
			t.Errorf("%s's web has TRIAL=%q, want 2", name, env)
		}
		if v := g.stateOf(name).Lock; v != nil {
			t.Errorf("state %s still locked: %+v", name, v)
		}
	}
}

// goneGroup is lockGroup with a longer rollout limit: the dependent's rollout outlasts the
// dependency's destroy.
var goneGroup = strings.Replace(lockGroup, "rolloutTimeout: 60s", "rolloutTimeout: 150s", 1)

// TestWavesDependencyGone: the dependency app waits on is unchanged, so the run does not hold
// its lock; destroyed alone while app rolls out, it fails the run (exit 1, naming it), where
// the run ended "applied and healthy" with exit 0. app's new pod becomes ready only once the
// dependency is gone: the test marks it ready itself (kwok leaves a never-ready pod Running
// and not ready), a stand-in for a pod that is slow to start.
func TestWavesDependencyGone(t *testing.T) {
	t.Parallel()
	g := NewGroup(t, "wg", "group: unused\nnodes: {}\n")
	dep, app := g.Name+"-dep", g.Name+"-app"
	g.dropNamespaces(dep, app)
	write := func(dir string, trial int, env string) {
		g.WriteFile(dir+"/slipway.yaml", strings.NewReplacer("{{NAME}}", g.Name+"-"+dir, "{{TRIAL}}", fmt.Sprint(trial), "{{ENV}}", env).Replace(goneGroup))
		g.WriteFile(dir+"/nodes/web/rootfs/etc/hostname", "web\n")
	}
	g.WriteFile("waves.yaml", "groups:\n  - {name: dep, file: dep/slipway.yaml}\n  - {name: app, file: app/slipway.yaml, dependsOn: [dep]}\n")
	write("dep", 1, "")
	write("app", 1, "")
	g.MustRun(0, "apply", "-f", "waves.yaml", "--yes")

	write("app", 2, `, SLIPWAY_DEV_POD: never-ready`)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	run := g.Command(ctx, "apply", "-f", "waves.yaml", "--yes", "-o", "json")
	var stderr bytes.Buffer
	run.Stderr = &stderr
	out, err := run.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	waitForLine(t, out, func(line string) bool {
		var e waveEvent
		return json.Unmarshal([]byte(line), &e) == nil && e.Group == "app" && e.Phase == "rollout"
	}, "no rollout event of group app")

	g.MustRun(0, "destroy", "-f", "dep/slipway.yaml", "--yes")
	g.markReady(ctx, app, "TRIAL", "2")

	var exit *exec.ExitError
	if err := run.Wait(); !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("apply while dep was destroyed: want exit 1, got %v\nstderr:\n%s", err, stderr.String())
	}
	for _, want := range []string{"group app: applied, but a group it depends on is not healthy any more", "group dep is not healthy: not applied"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("no %q in the run's error:\n%s", want, stderr.String())
		}
	}
}

// markReady marks ready every pod in ns whose node container has env key=value, as kubelet
// does once its container runs: conditions, container statuses.
func (g *Group) markReady(ctx context.Context, ns, key, value string) {
	g.t.Helper()
	pods := g.Kube.Clientset.CoreV1().Pods(ns)
	for {
		list, err := pods.List(ctx, metav1.ListOptions{})
		if err != nil {
			g.t.Fatal(err)
		}
		marked := 0
		for _, p := range list.Items {
			if !hasEnv(p, key, value) || p.Status.Phase != corev1.PodRunning {
				continue
			}
			now := metav1.Now()
			for i, c := range p.Status.Conditions {
				if c.Type == corev1.PodReady || c.Type == corev1.ContainersReady {
					p.Status.Conditions[i].Status, p.Status.Conditions[i].Reason, p.Status.Conditions[i].LastTransitionTime = corev1.ConditionTrue, "", now
				}
			}
			if !hasCondition(p, corev1.ContainersReady) {
				p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: now})
			}
			for i := range p.Status.ContainerStatuses {
				p.Status.ContainerStatuses[i].Ready, p.Status.ContainerStatuses[i].Started = true, ptr.To(true)
			}
			if _, err := pods.UpdateStatus(ctx, &p, metav1.UpdateOptions{}); apierrors.IsConflict(err) {
				continue // kwok or a controller wrote it meanwhile: the next round reads it anew
			} else if err != nil {
				g.t.Fatalf("mark pod %s/%s ready: %v", ns, p.Name, err)
			}
			marked++
		}
		if marked > 0 {
			return
		}
		select {
		case <-ctx.Done():
			g.t.Fatalf("no running pod with %s=%s in %s to mark ready", key, value, ns)
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func hasEnv(p corev1.Pod, key, value string) bool {
	for _, c := range p.Spec.Containers {
		for _, e := range c.Env {
			if e.Name == key && e.Value == value {
				return true
			}
		}
	}
	return false
}

func hasCondition(p corev1.Pod, t corev1.PodConditionType) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == t {
			return true
		}
	}
	return false
}
