package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"slipway.dev/slipway/internal/engine/lane"
	"slipway.dev/slipway/internal/engine/rollout"
	"slipway.dev/slipway/internal/event"
	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/spec"
	"slipway.dev/slipway/internal/state"
	"slipway.dev/slipway/internal/status"
)

// requireStateWriteError fails unless err holds a StateWriteError of the write when at mem://test
// wrapping errDiskFull, and its message names both.
func requireStateWriteError(t *testing.T, err error, when string) {
	t.Helper()
	var we *StateWriteError
	if !errors.As(err, &we) || we.When != when || we.Backend != "mem://test" || !errors.Is(err, errDiskFull) {
		t.Fatalf("error %v: want a state write error of the write %q at mem://test wrapping %v", err, when, errDiskFull)
	}
	if want := "state mem://test: write " + when + " failed: disk full"; !strings.Contains(err.Error(), want) {
		t.Errorf("error %q lacks %q", err, want)
	}
}

// Issue 11 item 8: an apply whose state write fails fails, naming the step and the backend.
func TestApplyStateWriteFails(t *testing.T) {
	store := &memStore{Fail: true}
	e := New(Options{})
	p := &plan.Plan{Group: "demo", Namespace: "demo", MachineIDs: map[string]string{"web": "id"}}
	err := e.Apply(context.Background(), p, Target{Group: &spec.Group{Name: "demo", Nodes: []*spec.Node{{Name: "web"}}}, Namespace: "demo", Store: store})
	requireStateWriteError(t, err, "of a cluster that needs no change")
}

// Every outcome of a rollout is recorded, and a failed write joins the rollout's own error
// instead of being dropped (issue 11 item 8); an interrupted wait writes nothing, so the
// in-flight marker stays for the next apply (item 1).
func TestSettle(t *testing.T) {
	prev := &appsv1.Deployment{Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
		Containers: []corev1.Container{{Name: "node", Image: "r/web@sha256:a"}}}}}}
	notReady := status.Result{Phase: status.Failed, Reason: "NotReady", Message: "pod web-1: did not become ready within 5s"}
	ready := status.Result{Phase: status.Ready}
	for _, tc := range []struct {
		name        string
		res         status.Result
		prev        *appsv1.Deployment
		back        status.Result
		backErr     error
		interrupted bool
		fail        bool
		wantErr     []string // parts of the error, none: nil
		wantWhen    string   // which write failed
		wantLast    *event.Rollout
		wantHash    string
	}{
		{name: "ready", res: ready, wantLast: &event.Rollout{Result: event.RolloutReady, Digest: "sha256:b"}, wantHash: "new"},
		{name: "ready, write fails", res: ready, fail: true, wantWhen: "after the rollout of deployment web",
			wantLast: &event.Rollout{Result: event.RolloutReady, Digest: "sha256:b"}, wantHash: "new"},
		{name: "failed, nothing to go back to", res: notReady, wantErr: []string{"deployment web: rollout failed: NotReady: pod web-1", "nothing to roll back to (no earlier template became ready)"},
			wantLast: &event.Rollout{Result: event.RolloutFailed, Digest: "sha256:b", Message: "NotReady: pod web-1: did not become ready within 5s"}, wantHash: "old"},
		{name: "failed, nothing to go back to, write fails", res: notReady, fail: true, wantWhen: "after the failed rollout of deployment web",
			wantErr:  []string{"nothing to roll back to"},
			wantLast: &event.Rollout{Result: event.RolloutFailed, Digest: "sha256:b", Message: "NotReady: pod web-1: did not become ready within 5s"}, wantHash: "old"},
		{name: "rolled back", res: notReady, prev: prev, back: ready, wantErr: []string{"rollout failed: NotReady: pod web-1: did not become ready within 5s; rolled back to sha256:a"},
			wantLast: &event.Rollout{Result: event.RolloutRolledBack, Digest: "sha256:a", Message: "NotReady: pod web-1: did not become ready within 5s"}, wantHash: "back"},
		{name: "rolled back, write fails", res: notReady, prev: prev, back: ready, fail: true, wantWhen: "after the rollback of deployment web",
			wantErr:  []string{"; rolled back to sha256:a"},
			wantLast: &event.Rollout{Result: event.RolloutRolledBack, Digest: "sha256:a", Message: "NotReady: pod web-1: did not become ready within 5s"}, wantHash: "back"},
		{name: "rolled back, not ready either", res: notReady, prev: prev, back: notReady, wantErr: []string{"rolled back to sha256:a, but that did not become ready either"},
			wantLast: &event.Rollout{Result: event.RolloutRolledBack, Digest: "sha256:a", Message: "NotReady: pod web-1: did not become ready within 5s"}, wantHash: "old"},
		{name: "rollback refused: still in flight", res: notReady, prev: prev, backErr: errors.New("forbidden"), wantErr: []string{"the rollback failed too: forbidden"},
			wantLast: &event.Rollout{Result: event.RolloutInProgress, Digest: "sha256:b"}, wantHash: "old"},
		{name: "interrupted: still in flight", res: status.Result{Phase: status.Failed, Reason: "Interrupted"}, prev: prev, interrupted: true,
			wantErr:  []string{"deployment web: rollout interrupted; the next apply follows it again: its new template stays applied with nothing to set back to"},
			wantLast: &event.Rollout{Result: event.RolloutInProgress, Digest: "sha256:b"}, wantHash: "old"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := &memStore{}
			rec := newRecorder(store, &state.Document{Group: "demo", Nodes: map[string]*state.NodeState{"web": {ReadyTemplate: "old"}}})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if err := lane.RecordInFlight(ctx, rec, "web", "web", "r/web@sha256:b", ""); err != nil {
				t.Fatal(err)
			}
			store.Fail = tc.fail
			if tc.interrupted {
				cancel()
			}
			rollbacks := 0
			rollback := func(*appsv1.Deployment) (status.Result, string, error) {
				rollbacks++
				if tc.back.Phase == status.Ready {
					return tc.back, "back", tc.backErr
				}
				return tc.back, "", tc.backErr
			}
			o := rollout.Outcome{Node: "web", Deployment: "web", Image: "r/web@sha256:b", Res: tc.res, Prev: tc.prev}
			if tc.res.Phase == status.Ready {
				o.Hash = "new"
			}
			err := New(Options{}).rollout.Settle(ctx, rec, o, rollback, func() string { return "" })
			for _, part := range tc.wantErr {
				if err == nil || !strings.Contains(err.Error(), part) {
					t.Errorf("error %v: want it to contain %q", err, part)
				}
			}
			if tc.wantWhen != "" {
				requireStateWriteError(t, err, tc.wantWhen)
			} else if len(tc.wantErr) == 0 && err != nil {
				t.Errorf("error %v, want none", err)
			}
			if wantBack := tc.prev != nil && !tc.interrupted; (rollbacks == 1) != wantBack {
				t.Errorf("%d rollbacks, want one: %v", rollbacks, wantBack)
			}
			ns := rec.doc.Nodes["web"]
			if d := cmp.Diff(tc.wantLast, ns.LastRollout, cmpopts.IgnoreFields(event.Rollout{}, "Time")); d != "" {
				t.Errorf("last rollout (-want +got):\n%s", d)
			}
			if ns.ReadyTemplate != tc.wantHash {
				t.Errorf("ready template %q, want %q", ns.ReadyTemplate, tc.wantHash)
			}
		})
	}
}

// The removal of a node that left the group is recorded, and a failed write is an error that
// names it (it was dropped: issue 11 item 8).
func TestRecorderRemovedFails(t *testing.T) {
	store := &memStore{Fail: true}
	rec := newRecorder(store, &state.Document{Group: "demo", Nodes: map[string]*state.NodeState{"db": {}}})
	requireStateWriteError(t, rec.removed(context.Background(), "db"), "after removing node db")
}

// Writes are spaced by the recorder's pace: the updates of many steps finishing within it go
// out together, each returning only once a written document holds its change.
func TestStateWritesArePaced(t *testing.T) {
	store := &memStore{Doc: &state.Document{Group: "demo"}}
	r := newRecorder(store, &state.Document{Group: "demo"})
	r.pace = 100 * time.Millisecond
	ctx := context.Background()
	if err := r.Update(ctx, "first", func(d *state.Document) { lane.NodeOf(d, "n0") }); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 20 {
		name := fmt.Sprintf("n%d", i+1)
		wg.Go(func() {
			if err := r.Update(ctx, "after "+name, func(d *state.Document) { lane.NodeOf(d, name) }); err != nil {
				t.Error(err)
			}
			// Returned: the store holds this node (read under the writers' lock).
			r.wmu.Lock()
			_, ok := store.Doc.Nodes[name]
			r.wmu.Unlock()
			if !ok {
				t.Errorf("update of %s returned before a write held it", name)
			}
		})
	}
	wg.Wait()
	if store.Writes > 3 {
		t.Errorf("%d writes for 21 updates, 20 of them at once; want them paced into at most 3", store.Writes)
	}
	if len(store.Doc.Nodes) != 21 {
		t.Errorf("the last document holds %d nodes, want 21", len(store.Doc.Nodes))
	}
}
