package status_test

// ScaledDown: a Deployment scaled to 0 replicas, until no pod of it is left.

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"slipway.dev/slipway/internal/status"
)

func TestScaledDown(t *testing.T) {
	// scaled is web after `replicas: 0`: the controller has scaled web-new to 0.
	scaled := func(w *world) {
		w.d.Spec.Replicas = ptr(int32(0))
		w.d.Generation, w.d.Status.ObservedGeneration = 3, 3
		w.newRS.Spec.Replicas = ptr(int32(0))
	}
	tests := []struct {
		name  string
		setup func(w *world)
		want  status.Result
	}{
		{
			name: "no pod left",
			setup: func(w *world) {
				scaled(w)
				w.pods = nil
			},
			want: status.Result{Phase: status.Ready, Message: "no pods remain"},
		},
		{
			name: "a terminating pod still counts",
			setup: func(w *world) {
				scaled(w)
				w.pod().DeletionTimestamp = ptr(at(2 * time.Second))
			},
			want: status.Result{Phase: status.Progressing, Message: "1 pod still present (web-new-1)"},
		},
		{
			name: "pods of both replica sets",
			setup: func(w *world) {
				scaled(w)
				w.pods = append(w.pods, readyPod(w.oldRS, "web-old-1"))
			},
			want: status.Result{Phase: status.Progressing, Message: "2 pods still present (web-new-1, web-old-1)", Ready: 1, Updated: 1, OldPods: 1},
		},
		{
			name: "a succeeded pod is gone",
			setup: func(w *world) {
				scaled(w)
				w.pod().Status.Phase = corev1.PodSucceeded
			},
			want: status.Result{Phase: status.Ready, Message: "no pods remain"},
		},
		{
			name: "replica set not yet scaled",
			setup: func(w *world) {
				scaled(w)
				w.newRS.Spec.Replicas = ptr(int32(1))
			},
			want: status.Result{Phase: status.Progressing, Message: "replica set web-new still wants 1 pod; 1 pod still present (web-new-1)", Ready: 1, Updated: 1},
		},
		{
			name: "generation not observed",
			setup: func(w *world) {
				scaled(w)
				w.d.Status.ObservedGeneration = 2
			},
			want: status.Result{Phase: status.Progressing, Message: "deployment web: generation 3 not yet observed by the controller (observed 2)"},
		},
		{
			name: "deployment not scaled to 0",
			want: status.Result{Phase: status.Progressing, Message: "deployment web: wants 1 replica, not 0", Desired: 1},
		},
		{
			name: "pod still there at the limit",
			setup: func(w *world) {
				scaled(w)
				w.pod().DeletionTimestamp = ptr(at(2 * time.Second))
				w.now = limit
			},
			want: status.Result{Phase: status.Failed, Reason: "Timeout", Message: "not done within 20s: 1 pod still present (web-new-1)"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := done()
			if tt.setup != nil {
				tt.setup(w)
			}
			got := status.ScaledDown(w.input())
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ScaledDown (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("nil deployment", func(t *testing.T) {
		got := status.ScaledDown(status.Input{Now: t0})
		want := status.Result{Phase: status.Progressing, Message: "deployment not found"}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("ScaledDown (-want +got):\n%s", diff)
		}
	})
}
