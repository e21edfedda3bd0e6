package e2e

// Issue 16 items 1, 2 and 4 (SPEC §6a): state versions, the copy of /var/lib before a
// migration, put back on rollback, removed after. Pods are simulated, so the state step does
// not run here (internal/render's tests run it): these tests check what the cluster gets and
// what the state records.

import (
	"context"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"slipway.dev/slipway/internal/render"
	"slipway.dev/slipway/internal/state"
)

const migrateGroup = `group: {{GROUP}}
nodes:
  solo:
    image: {rootfs: nodes/solo/rootfs}
    init: none
`

// migrateFile is migrateGroup at state version (none when ""), never ready when broken.
func migrateFile(version string, broken bool) string {
	f := migrateGroup
	if version != "" {
		f += "    state: {version: \"" + version + "\"}\n"
	}
	if broken {
		f += "    " + neverReadyEnv + "\n"
	}
	return f
}

// stateStep returns the version of solo's live state step, whether it has one, and whether
// it and the node's container both mount the claim on /var/lib.
func (g *Group) stateStep() (string, bool, bool) {
	g.t.Helper()
	ps := g.roDeployment("solo").Spec.Template.Spec
	v, ok := render.StateInitVersion(&ps)
	mounts := mountsState(ps.Containers[0])
	for _, c := range ps.InitContainers {
		if c.Name == render.InitContainerState {
			mounts = mounts && mountsState(c) && c.Image == ps.Containers[0].Image && c.Command[2] == render.StateScript
		}
	}
	return v, ok, mounts
}

func mountsState(c corev1.Container) bool {
	for _, m := range c.VolumeMounts {
		if m.Name == "state" && m.MountPath == "/var/lib" {
			return true
		}
	}
	return false
}

// soloState is the state's record of solo.
func (g *Group) soloState() *state.NodeState {
	g.t.Helper()
	ns := g.State().State.Nodes["solo"]
	if ns == nil {
		g.t.Fatal("state: no node solo")
	}
	return ns
}

// requireVersion checks the state's version and copy, and the live template's state step.
func (g *Group) requireVersion(when, version string, copyHeld *state.StateCopy, step string) {
	g.t.Helper()
	g.requireVersionBeside(when, version, copyHeld, step)
}

// requireVersionBeside is requireVersion in a namespace that holds someone else's Jobs: the
// Jobs there are exactly those of the UIDs foreign (slipway left none of its own).
func (g *Group) requireVersionBeside(when, version string, copyHeld *state.StateCopy, step string, foreign ...types.UID) {
	g.t.Helper()
	ns := g.soloState()
	if ns.StateVersion != version || (ns.Copy == nil) != (copyHeld == nil) || ns.Copy != nil && *ns.Copy != *copyHeld {
		g.t.Errorf("%s: state version %q, copy %+v; want %q, %+v", when, ns.StateVersion, ns.Copy, version, copyHeld)
	}
	if v, ok, mounts := g.stateStep(); !ok || v != step || !mounts {
		g.t.Errorf("%s: solo's state step at %q (present %v, mounts the claim %v), want at %q", when, v, ok, mounts, step)
	}
	jobs, err := g.Kube.Clientset.BatchV1().Jobs(g.Name).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		g.t.Fatalf("%s: list Jobs: %v", when, err)
	}
	var left []string
	for _, j := range jobs.Items {
		if !slices.Contains(foreign, j.UID) {
			left = append(left, j.Name)
		}
	}
	if len(left) > 0 || len(jobs.Items) != len(foreign) {
		g.t.Errorf("%s: %d Jobs in the namespace, slipway's %v; want only the foreign ones %v", when, len(jobs.Items), left, foreign)
	}
}

// TestMigrationCopyRestoreRemove: a node deployed before it had a version gets one (a
// migration from none: its claim and mounts stay); a failed migration is set back to a
// template whose state step puts the copy back and the state keeps the old version; a
// successful one records the new version and removes the copy; plan and status say so.
func TestMigrationCopyRestoreRemove(t *testing.T) {
	t.Parallel()
	g := NewGroup(t, "migrate", migrateFile("", false), "solo")
	g.MustRun(0, "apply", "--yes")
	uid := g.roClaimUID("solo")
	if ps := g.roDeployment("solo").Spec.Template.Spec; len(ps.InitContainers) != 0 || !mountsState(ps.Containers[0]) {
		t.Fatalf("a node without a version: init containers %v, claim on /var/lib %v", ps.InitContainers, mountsState(ps.Containers[0]))
	}

	g.roWriteGroupFile(migrateFile("1", false))
	p := g.Run("plan", "--detailed-exitcode")
	for _, want := range []string{"~   migrate  state version none -> 1\n", "state migration none -> 1: its init container slipway-state copies /var/lib", "remove the copy of /var/lib from the volume (Job solo-state"} {
		if p.Code != 2 || !strings.Contains(p.Stdout, want) {
			t.Errorf("plan of the first version: want exit 2 and %q, got %s", want, p)
		}
	}
	g.MustRun(0, "apply", "--yes")
	g.roRequireReady("solo", 1)
	g.requireVersion("after the first version", "1", nil, "1")
	if got := g.roClaimUID("solo"); got != uid {
		t.Errorf("the claim was replaced: UID %s, was %s", got, uid)
	}
	g.MustRun(0, "plan", "--detailed-exitcode")

	// A migration that never becomes ready: set back to version 1's template, which restores.
	g.roWriteGroupFile(migrateFile("2", true))
	r := g.Run("apply", "--yes", "--timeout", neverReadyLimit)
	if want := "rolled back to sha256:"; r.Code != 1 || !strings.Contains(r.Stderr, want) ||
		!strings.Contains(r.Stderr, "(its init container slipway-state puts back the copy of /var/lib taken at state version 1; the state keeps that version)") {
		t.Fatalf("apply of a never-ready migration: want exit 1, the rollback and the restore, got %s", r)
	}
	g.roRequireReady("solo", 1)
	g.requireVersion("after the rollback", "1", nil, "1")
	if env := roEnv(g.roDeployment("solo").Spec.Template.Spec.Containers[0], "SLIPWAY_DEV_POD"); env != "" {
		t.Errorf("the template set back has SLIPWAY_DEV_POD=%s", env)
	}

	// The same migration, ready: the version is recorded and the copy removed.
	g.roWriteGroupFile(migrateFile("2", false))
	g.MustRun(0, "apply", "--yes")
	g.requireVersion("after the migration ran ready", "2", nil, "2")
	st := g.MustRun(0, "status")
	if !strings.Contains(st.Stdout, "STATE") || !strings.Contains(st.Stdout, "  2  ") || strings.Contains(st.Stdout, "+copy") {
		t.Errorf("status after the migration: want a STATE column with 2 and no copy:\n%s", st.Stdout)
	}
	g.MustRun(0, "plan", "--detailed-exitcode")
	if got := g.roClaimUID("solo"); got != uid {
		t.Errorf("the claim was replaced: UID %s, was %s", got, uid)
	}
}

// TestMigrationKilled: SIGKILL once the migration's template is applied (the copy made, the
// rollout not ended), and once a failed migration's template was set back (before the state
// recorded it, the restore pending): the state never records the new version before a
// rollout at it ran ready, and the next apply converges.
func TestMigrationKilled(t *testing.T) {
	t.Parallel()
	g := NewGroup(t, "migkill", migrateFile("1", false), "solo")
	g.MustRun(0, "apply", "--yes")
	g.requireVersion("after the first apply", "1", nil, "1")

	// Killed between the copy and the end of the rollout.
	g.roWriteGroupFile(migrateFile("2", true))
	g.killWhen(func(d *appsv1.Deployment) bool {
		v, _ := render.StateInitVersion(&d.Spec.Template.Spec)
		return v == "2"
	}, "--timeout", "2m")
	g.requireVersion("killed during the migration's rollout", "1", &state.StateCopy{From: "1", To: "2"}, "2")
	st := g.MustRun(0, "status")
	if !strings.Contains(st.Stdout, "1 +copy") || !strings.Contains(st.Stdout, "its migration to 2 has not run ready: a failed rollout puts it back") {
		t.Errorf("status with the copy held: want 1 +copy and its note:\n%s", st.Stdout)
	}
	g.roWriteGroupFile(migrateFile("2", false))
	g.MustRun(0, "apply", "--yes")
	g.requireVersion("after the next apply", "2", nil, "2")

	// Killed between the rollback and the restore: the template set back is applied, the
	// state does not know yet.
	for attempt := 1; ; attempt++ {
		g.roWriteGroupFile(migrateFile("3", true))
		sawNew := false
		g.killWhen(func(d *appsv1.Deployment) bool {
			v, _ := render.StateInitVersion(&d.Spec.Template.Spec)
			sawNew = sawNew || v == "3"
			return sawNew && v == "2"
		}, "--timeout", "3s")
		ns := g.soloState()
		if ns.StateVersion != "2" {
			t.Fatalf("killed after the rollback: state version %q, want 2", ns.StateVersion)
		}
		if ns.Copy != nil {
			break // the kill landed before the rollback was recorded
		}
		if attempt == 3 {
			t.Fatalf("the kill never landed between the rollback and its record in 3 attempts")
		}
	}
	g.requireVersion("killed after the rollback", "2", &state.StateCopy{From: "2", To: "3"}, "2")
	// The limit is the rollback's too, and the template set back is a new ReplicaSet (it
	// carries the hand-over it restores).
	r := g.Run("apply", "--yes", "--timeout", neverReadyLimit)
	if r.Code != 1 || !strings.Contains(r.Stderr, "puts back the copy of /var/lib taken at state version 2") {
		t.Fatalf("the next apply (still never ready): want exit 1 and the restoring rollback, got %s", r)
	}
	g.requireVersion("after the next apply", "2", nil, "2")
	g.roWriteGroupFile(migrateFile("3", false))
	g.MustRun(0, "apply", "--yes")
	g.requireVersion("after the migration ran ready", "3", nil, "3")
}

// killWhen starts apply with args, watches solo's Deployment and SIGKILLs slipway as soon as
// cond holds, then unlocks the state as an operator does.
func (g *Group) killWhen(cond func(*appsv1.Deployment) bool, args ...string) {
	g.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	w, err := g.Kube.Clientset.AppsV1().Deployments(g.Name).Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=solo"})
	if err != nil {
		g.t.Fatal(err)
	}
	defer w.Stop()
	cmd := g.Command(ctx, append([]string{"apply", "--yes"}, args...)...)
	if err := cmd.Start(); err != nil {
		g.t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				g.t.Fatal("the watch of solo ended")
			}
			if d, isDep := ev.Object.(*appsv1.Deployment); isDep && ev.Type == watch.Modified && cond(d) {
				_ = cmd.Process.Kill()
				<-done
				g.unlock(cmd)
				return
			}
		case <-done:
			g.t.Fatalf("slipway %v ended before the moment to kill it", cmd.Args[1:])
		case <-ctx.Done():
			g.t.Fatal("no moment to kill slipway came")
		}
	}
}

func (g *Group) unlock(*exec.Cmd) {
	g.t.Helper()
	if l := g.State().Lock; l != nil {
		g.MustRun(0, "state", "unlock", l.ID)
	}
}
