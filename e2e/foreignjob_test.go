package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	"slipway.dev/slipway/internal/state"
)

// editState changes the group's state file as fn says (what a run killed at the right moment
// leaves, written without killing one).
func (g *Group) editState(fn func(*state.Document)) {
	g.t.Helper()
	path := filepath.Join(g.Dir, ".slipway", "state", g.Name+".json")
	b, err := os.ReadFile(path)
	if err != nil {
		g.t.Fatal(err)
	}
	var d state.Document
	if err := json.Unmarshal(b, &d); err != nil {
		g.t.Fatal(err)
	}
	fn(&d)
	if b, err = json.Marshal(&d); err != nil {
		g.t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		g.t.Fatal(err)
	}
}

// TestForeignRemovalJob (issue 35 item 3): a Job named as a node's removal Job (<node>-state)
// that slipway did not make is a conflict of the plan that would remove the node's copy of
// /var/lib: plan names it, apply refuses before any change and the Job stays; once it is gone,
// apply removes the copy.
func TestForeignRemovalJob(t *testing.T) {
	t.Parallel()
	g := NewGroup(t, "fjob", migrateFile("2", false), "solo")
	g.MustRun(0, "apply", "--yes")
	// The copy taken at 1 and handed to 2, whose removal did not run (a run killed after the
	// rollout ran ready).
	g.editState(func(d *state.Document) {
		d.Nodes["solo"].StateVersion, d.Nodes["solo"].Copy = "2", &state.StateCopy{From: "1", To: "2"}
	})
	ctx := context.Background()
	jobs := g.Kube.Clientset.BatchV1().Jobs(g.Name)
	theirs, err := jobs.Create(ctx, &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "solo-state", Labels: map[string]string{"app": "backup"}},
		Spec: batchv1.JobSpec{Suspend: ptr.To(true), Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers:    []corev1.Container{{Name: "backup", Image: "registry.test/backup:1"}},
		}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	conflict := "Job " + g.Name + "/solo-state exists and slipway did not make it: apply removes node solo's copy of /var/lib with a Job of that name and will not delete this one"
	p := g.Run("plan", "--detailed-exitcode")
	if p.Code != 2 || !strings.Contains(p.Stdout, conflict) || !strings.Contains(p.Stdout, "1 conflict(s): apply refuses") {
		t.Errorf("plan: want exit 2 and the Job named as a conflict, got %s", p)
	}
	r := g.MustRun(1, "apply", "--yes")
	if !strings.Contains(r.Stderr, "apply refused before any change") || !strings.Contains(r.Stderr, conflict) {
		t.Errorf("apply: want a refusal naming the Job, got %s", r)
	}
	got, err := jobs.Get(ctx, "solo-state", metav1.GetOptions{})
	if err != nil || got.UID != theirs.UID || got.DeletionTimestamp != nil {
		t.Fatalf("their Job after apply: %v (uid %v, want %v)", err, got.GetUID(), theirs.UID)
	}
	if cp := g.soloState().Copy; cp == nil || *cp != (state.StateCopy{From: "1", To: "2"}) {
		t.Errorf("the state's copy after the refused apply: %+v, want the one held", cp)
	}

	bg := metav1.DeletePropagationBackground
	if err := jobs.Delete(ctx, "solo-state", metav1.DeleteOptions{PropagationPolicy: &bg}); err != nil {
		t.Fatal(err)
	}
	g.waitJobGone("solo-state")
	g.MustRun(0, "apply", "--yes")
	g.requireVersion("after their Job went", "2", nil, "2")
}

// TestForeignMigrationJob (issue 43 item 12): a migration in the plan takes a copy of
// /var/lib that apply removes, once the rollout runs ready, with a Job <node>-state; someone
// else's Job of that name is a conflict of that plan too. Apply refused it only after the
// rollout, while plan listed "remove the copy (Job solo-state …)" and no conflict.
func TestForeignMigrationJob(t *testing.T) {
	t.Parallel()
	g := NewGroup(t, "fmig", migrateFile("1", false), "solo")
	g.MustRun(0, "apply", "--yes")
	ctx := context.Background()
	jobs := g.Kube.Clientset.BatchV1().Jobs(g.Name)
	theirs, err := jobs.Create(ctx, &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "solo-state", Labels: map[string]string{"app": "backup"}},
		Spec: batchv1.JobSpec{Suspend: ptr.To(true), Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers:    []corev1.Container{{Name: "backup", Image: "registry.test/backup:1"}},
		}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	g.roWriteGroupFile(migrateFile("2", false))
	conflict := "Job " + g.Name + "/solo-state exists and slipway did not make it: apply removes node solo's copy of /var/lib with a Job of that name and will not delete this one"
	p := g.Run("plan", "--detailed-exitcode")
	if p.Code != 2 || !strings.Contains(p.Stdout, conflict) || !strings.Contains(p.Stdout, "1 conflict(s): apply refuses") {
		t.Errorf("plan of a migration: want exit 2 and the Job named as a conflict, got %s", p)
	}
	r := g.MustRun(1, "apply", "--yes")
	if !strings.Contains(r.Stderr, "apply refused before any change") || !strings.Contains(r.Stderr, conflict) {
		t.Errorf("apply: want a refusal before any change naming the Job, got %s", r)
	}
	g.requireVersionBeside("after the refused apply", "1", nil, "1", theirs.UID)
	got, err := jobs.Get(ctx, "solo-state", metav1.GetOptions{})
	if err != nil || got.UID != theirs.UID || got.DeletionTimestamp != nil {
		t.Fatalf("their Job after apply: %v (uid %v, want %v)", err, got.GetUID(), theirs.UID)
	}
}

// waitJobGone waits until the group's Job name is gone.
func (g *Group) waitJobGone(name string) {
	g.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	w, err := g.Kube.Clientset.BatchV1().Jobs(g.Name).Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + name})
	if err != nil {
		g.t.Fatal(err)
	}
	defer w.Stop()
	if _, err := g.Kube.Clientset.BatchV1().Jobs(g.Name).Get(ctx, name, metav1.GetOptions{}); err != nil {
		return
	}
	for ev := range w.ResultChan() {
		if ev.Type == watch.Deleted {
			return
		}
	}
	g.t.Fatalf("job %s/%s: not gone within a minute", g.Name, name)
}
