package status_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"slipway.dev/slipway/internal/status"
)

func TestEvents(t *testing.T) {
	s := time.Second
	// A crash-looping new pod web-new-1, with events of everything around it.
	w := done()
	w.pods = append(w.pods, readyPod(w.oldRS, "web-old-1"))
	series := event("e-series", "Pod", "web-new-1", "web-new-1-uid", "BackOff", "Back-off restarting failed container node", 0, 0, 0)
	series.FirstTimestamp, series.LastTimestamp = metav1.Time{}, metav1.Time{}
	series.EventTime = metav1.NewMicroTime(t0.Add(6 * s))
	series.Series = &corev1.EventSeries{Count: 4, LastObservedTime: metav1.NewMicroTime(t0.Add(12 * s))}
	otherNS := event("e-other-ns", "Pod", "web-new-1", "", "Killing", "elsewhere", 3*s, 3*s, 1)
	otherNS.Namespace, otherNS.InvolvedObject.Namespace = "other", "other"
	w.events = []*corev1.Event{
		series,
		event("e-pulled", "Pod", "web-new-1", "web-new-1-uid", "Pulled", "Container image already present on machine", 2*s, 8*s, 3),
		event("e-scheduled", "Pod", "web-new-1", "web-new-1-uid", "Scheduled", "Successfully assigned demo/web-new-1 to kwok-node-0", 1*s, 1*s, 1),
		event("e-created", "ReplicaSet", "web-new", "web-new-uid", "SuccessfulCreate", "Created pod: web-new-1", 1*s, 1*s, 1),
		event("e-scaled", "Deployment", "web", "web-uid", "ScalingReplicaSet", "Scaled up replica set web-new from 0 to 1", 1*s, 1*s, 1),
		event("e-multiline", "Pod", "web-new-1", "web-new-1-uid", "Failed", "Error: failed to start\n  container node", 9*s, 9*s, 1),
		// Not about web-new-1, its ReplicaSet or its Deployment:
		event("e-old-pod", "Pod", "web-old-1", "web-old-1-uid", "Killing", "Stopping container node", 0, 0, 1),
		event("e-old-rs", "ReplicaSet", "web-old", "web-old-uid", "SuccessfulDelete", "Deleted pod: web-old-1", 0, 0, 1),
		event("e-same-name-earlier-pod", "Pod", "web-new-1", "an-earlier-uid", "Started", "Started container node", 0, 0, 1),
		event("e-same-name-earlier-deployment", "Deployment", "web", "an-earlier-uid", "ScalingReplicaSet", "Scaled down", 0, 0, 1),
		event("e-node", "Node", "kwok-node-0", "", "NodeReady", "node is ready", 0, 0, 1),
		otherNS,
	}
	// Events of the same second are ordered by their resourceVersion.
	for i, e := range w.events {
		e.ResourceVersion = fmt.Sprint(200 - i)
	}
	w.events[3].ResourceVersion, w.events[4].ResourceVersion, w.events[2].ResourceVersion = "101", "100", "102"
	dep := "deployment web"
	rs := "replica set web-new"
	pod := "pod web-new-1"
	podEvents := []string{
		"Scheduled: Successfully assigned demo/web-new-1 to kwok-node-0",
		"Pulled: Container image already present on machine (x3)",
		"Failed: Error: failed to start container node",
		"BackOff: Back-off restarting failed container node (x4)",
	}
	all := []status.EventGroup{
		{Object: dep, Lines: []string{"ScalingReplicaSet: Scaled up replica set web-new from 0 to 1"}},
		{Object: rs, Lines: []string{"SuccessfulCreate: Created pod: web-new-1"}},
		{Object: pod, Lines: podEvents},
	}
	tests := []struct {
		name string
		pod  string
		n    int
		want []status.EventGroup
	}{
		{name: "all, by object, oldest first", pod: "web-new-1", n: 0, want: all},
		{name: "the last three", pod: "web-new-1", n: 3, want: []status.EventGroup{{Object: pod, Lines: podEvents[1:]}}},
		{name: "more than there are", pod: "web-new-1", n: 50, want: all},
		{name: "no pod: the new replica set and the deployment", want: all[:2]},
		{
			name: "an old pod: its own replica set",
			pod:  "web-old-1",
			want: []status.EventGroup{
				{Object: dep, Lines: []string{"ScalingReplicaSet: Scaled up replica set web-new from 0 to 1"}},
				{Object: "replica set web-old", Lines: []string{"SuccessfulDelete: Deleted pod: web-old-1"}},
				{Object: "pod web-old-1", Lines: []string{"Killing: Stopping container node"}},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := status.Events(w.input(), tt.pod, tt.n)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Events (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("nil deployment", func(t *testing.T) {
		if got := status.Events(status.Input{Events: w.events}, "web-new-1", 5); got != nil {
			t.Errorf("Events = %q, want nil", got)
		}
	})
}

// TestEventsQuoted: an event's reason and message are whoever wrote the event's: escape codes
// in them are quoted, a line break is a space (issue 35, item 8).
func TestEventsQuoted(t *testing.T) {
	w := done()
	w.events = []*corev1.Event{event("e-fake", "Pod", "web-new-1", "web-new-1-uid", "Pulled\x1b[2K",
		"x\x1b[1A\x1b[2K\nNo changes.\r", time.Second, time.Second, 1)}
	want := []status.EventGroup{{Object: "pod web-new-1", Lines: []string{`Pulled\x1b[2K: x\x1b[1A\x1b[2K No changes.`}}}
	if diff := cmp.Diff(want, status.Events(w.input(), "web-new-1", 0)); diff != "" {
		t.Errorf("Events (-want +got):\n%s", diff)
	}
}
