package engine

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"slipway.dev/slipway/internal/engine/lane"
	"slipway.dev/slipway/internal/event"
	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/render"
	"slipway.dev/slipway/internal/state"
)

// versioned is testDeployment with the state step at version ("" and no step when !step).
func versioned(name, image, version string, step bool) *unstructured.Unstructured {
	u := testDeployment(name, image, 1)
	if !step {
		return u
	}
	var d appsv1.Deployment
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &d); err != nil {
		panic(err)
	}
	d.Spec.Template.Spec.InitContainers = append(d.Spec.Template.Spec.InitContainers, render.StateInitContainer(image, version))
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&d)
	if err != nil {
		panic(err)
	}
	return &unstructured.Unstructured{Object: m}
}

// migrationRun is node web (no roles) running image imgA at state version from (a step in its
// template unless from is "", a node deployed before it had a version), recorded ready.
func migrationRun(t *testing.T, from string, cp *state.StateCopy) *applyRun {
	t.Helper()
	r := newApplyRun(t, "", nil)
	r.group.Nodes[0].Roles = nil
	if _, err := r.f.Apply(context.Background(), versioned("web", imgA, from, from != ""), applyOptions()); err != nil {
		t.Fatal(err)
	}
	r.store.Doc = &state.Document{Group: "demo", Namespace: "demo", Nodes: map[string]*state.NodeState{"web": {
		MachineID: "id", Image: state.ImageRecord{Ref: "r/web", Digest: lane.DigestOf(imgA)},
		ReadyTemplate: lane.TemplateHash(r.f, depKey("web")), PreviousReady: imgA, StateVersion: from, Copy: cp,
		LastRollout: &event.Rollout{Result: event.RolloutReady, Digest: lane.DigestOf(imgA)}}}}
	r.f.ResetCalls()
	return r
}

// migrate applies web at image and state version to, as plan makes it: a migration when to
// differs from the state's version, a copy to remove when the state holds one that is done.
func (r *applyRun) migrate(ctx context.Context, image, to string) error {
	ns := r.store.Doc.Nodes["web"]
	np := plan.NodePlan{Node: "web", Changes: []plan.Change{templateChange("web")}}
	if to != ns.StateVersion {
		np.Migration = &plan.Migration{From: ns.StateVersion, To: to}
	}
	if ns.Copy != nil && ns.Copy.To == ns.StateVersion {
		np.RemoveCopy = &plan.Copy{From: ns.Copy.From, To: ns.Copy.To}
	}
	if image == "" {
		np.Changes = nil
	}
	p := &plan.Plan{Group: "demo", Namespace: "demo", StateSerial: r.store.Doc.Serial,
		MachineIDs: map[string]string{"web": "id"},
		Images:     []plan.Image{{Name: "web", Node: "web", Tag: "r/web:t", Digest: image}},
		Desired:    []*unstructured.Unstructured{versioned("web", image, to, true)},
		Nodes:      []plan.NodePlan{np}}
	e := New(Options{Kube: r.f, Timeout: 300_000_000, Emit: func(ev event.Event) { r.events = append(r.events, ev) }})
	return e.Apply(ctx, p, Target{Group: r.group, Namespace: "demo", Store: r.store})
}

// liveStateStep is the version of the state step of web's live template, and whether it has one.
func (r *applyRun) liveStateStep() (string, bool) {
	r.f.Mu.Lock()
	defer r.f.Mu.Unlock()
	return render.StateInitVersion(&r.f.Deps["web"].Dep.Spec.Template.Spec)
}

// liveStateEnv is the value of the variable name in the state step of web's live template.
func (r *applyRun) liveStateEnv(name string) string {
	r.f.Mu.Lock()
	defer r.f.Mu.Unlock()
	for _, c := range r.f.Deps["web"].Dep.Spec.Template.Spec.InitContainers {
		for _, e := range c.Env {
			if c.Name == render.InitContainerState && e.Name == name {
				return e.Value
			}
		}
	}
	return ""
}

func TestApplyMigration(t *testing.T) {
	for _, tc := range []struct {
		name        string
		from        string
		copy        *state.StateCopy
		image, to   string
		jobErr      error
		wantErr     string
		wantVersion string           // the state's version after
		wantCopy    *state.StateCopy // the state's copy after
		wantStep    string           // the live template's state step version
		wantRestore string           // the hand-over the live template's state step puts back
		wantJobs    []string         // the removal Jobs' versions
		wantCalls   []string
	}{
		{name: "ready: version recorded, copy removed", from: "1", image: imgB, to: "2",
			wantVersion: "2", wantStep: "2", wantJobs: []string{"2"},
			wantCalls: []string{"apply Deployment web", "run Job web-state"}},
		{name: "never ready: the template set back restores, the state keeps its version", from: "1", image: imgHang, to: "2",
			wantErr: "its init container slipway-state puts back the copy of /var/lib taken at state version 1", wantVersion: "1", wantStep: "1", wantRestore: "2",
			wantCalls: []string{"apply Deployment web", "apply Deployment web"}},
		{name: "a node from before versions: its old template gets the restoring step", from: "", image: imgCrash, to: "1",
			wantErr: "taken at state version none", wantVersion: "", wantStep: "", wantRestore: "1",
			wantCalls: []string{"apply Deployment web", "apply Deployment web"}},
		{name: "the removal fails: the copy stays for the next apply", from: "1", image: imgB, to: "2", jobErr: errors.New("job demo/web-state failed: BackoffLimitExceeded"),
			wantErr: "the copy stays and the next apply removes it", wantVersion: "2", wantCopy: &state.StateCopy{From: "1", To: "2"}, wantStep: "2", wantJobs: []string{"2"},
			wantCalls: []string{"apply Deployment web", "run Job web-state"}},
		{name: "a copy left by a run that was killed: removed, nothing else", from: "2", copy: &state.StateCopy{From: "1", To: "2"}, to: "2",
			wantVersion: "2", wantStep: "2", wantJobs: []string{"2"},
			wantCalls: []string{"run Job web-state"}},
		{name: "a copy left, then the next migration: removed before it", from: "2", copy: &state.StateCopy{From: "1", To: "2"}, image: imgB, to: "3",
			wantVersion: "3", wantStep: "3", wantJobs: []string{"2", "3"},
			wantCalls: []string{"run Job web-state", "apply Deployment web", "run Job web-state"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := migrationRun(t, tc.from, tc.copy)
			r.f.JobErr = tc.jobErr
			err := r.migrate(context.Background(), tc.image, tc.to)
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("apply: %v, want an error with %q", err, tc.wantErr)
			}
			ns := r.store.Doc.Nodes["web"]
			if ns.StateVersion != tc.wantVersion {
				t.Errorf("state version %q, want %q", ns.StateVersion, tc.wantVersion)
			}
			if d := cmp.Diff(tc.wantCopy, ns.Copy); d != "" {
				t.Errorf("copy in the state (-want +got):\n%s", d)
			}
			if v, ok := r.liveStateStep(); !ok || v != tc.wantStep {
				t.Errorf("the live template's state step: %q (present %v), want %q", v, ok, tc.wantStep)
			}
			if got := r.liveStateEnv(render.EnvStateRestore); got != tc.wantRestore {
				t.Errorf("the live template's state step puts back the hand-over to %q, want %q", got, tc.wantRestore)
			}
			var jobs []string
			for _, j := range r.f.Jobs {
				c := j.Spec.Template.Spec.Containers[0]
				if got := c.Command[len(c.Command)-1]; got != "remove" || c.Command[2] != render.StateScript {
					t.Errorf("Job %s runs %q, want the state step in mode remove", j.Name, got)
				}
				jobs = append(jobs, c.Env[0].Value)
			}
			if d := cmp.Diff(tc.wantJobs, jobs); d != "" {
				t.Errorf("removal Jobs' versions (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tc.wantCalls, r.f.Calls()); d != "" {
				t.Errorf("calls (-want +got):\n%s", d)
			}
		})
	}
}

// TestApplyMigrationKilled: a run killed once the migration's template is applied leaves the
// copy recorded, the rollout in flight and the old version; the next apply follows the
// rollout, records the new version only once it ran ready, and removes the copy.
func TestApplyMigrationKilled(t *testing.T) {
	r := migrationRun(t, "1", nil)
	frozen := r.f.KillAt("apply Deployment web")
	go r.migrate(context.Background(), imgSlow, "2") //nolint:errcheck // killed: it never returns
	<-frozen
	ns := r.store.Doc.Nodes["web"]
	if ns.StateVersion != "1" || ns.Copy == nil || *ns.Copy != (state.StateCopy{From: "1", To: "2"}) || !lane.InFlight(ns) {
		t.Fatalf("after the kill: version %q, copy %+v, last rollout %+v; want 1, a copy 1 -> 2, in flight", ns.StateVersion, ns.Copy, ns.LastRollout)
	}
	r.f.Release()
	r.f.ResetCalls()
	if err := r.migrate(context.Background(), imgSlow, "2"); err != nil {
		t.Fatal(err)
	}
	if ns := r.store.Doc.Nodes["web"]; ns.StateVersion != "2" || ns.Copy != nil {
		t.Errorf("after the next apply: version %q, copy %+v; want 2 and none", ns.StateVersion, ns.Copy)
	}
	if d := cmp.Diff([]string{"apply Deployment web", "run Job web-state"}, r.f.Calls()); d != "" {
		t.Errorf("calls (-want +got):\n%s", d)
	}
}

// TestLogContainer: a failure report shows the log of the init container that failed (the
// state step's "not enough free space"), else the node's.
func TestLogContainer(t *testing.T) {
	failedInit := corev1.ContainerStatus{Name: render.InitContainerState, RestartCount: 1,
		State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
		LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1}}}
	doneInit := corev1.ContainerStatus{Name: render.InitContainerState, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0}}}
	for _, tc := range []struct {
		name string
		init []corev1.ContainerStatus
		want string
	}{
		{"no init container", nil, render.ContainerNode},
		{"the state step ran", []corev1.ContainerStatus{doneInit}, render.ContainerNode},
		{"the state step fails", []corev1.ContainerStatus{failedInit}, render.InitContainerState},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: render.ContainerNode}}},
				Status: corev1.PodStatus{InitContainerStatuses: tc.init}}
			if got := lane.LogContainer(p); got != tc.want {
				t.Errorf("logContainer = %s, want %s", got, tc.want)
			}
		})
	}
}
