package status

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// EventGroup is the events of one object, "REASON: message" lines oldest first (" (xN)"
// appended when the event was seen N > 1 times).
type EventGroup struct {
	// Object is what the events are about: "deployment web", "replica set web-7d9f",
	// "pod web-7d9f-x2k".
	Object string
	Lines  []string
}

// Events is the last n events about a pod, its ReplicaSet and the Deployment, grouped by the
// object each is about (the Deployment, then the ReplicaSet, then the pod), for a failure
// report: a Deployment's events name other ReplicaSets, and shown under the pod they read as
// if they were the pod's. pod may be empty (e.g. pods could not be created): then the events
// of the new ReplicaSet and the Deployment. n <= 0 means all of them.
func Events(in Input, pod string, n int) []EventGroup {
	d := in.Deployment
	if d == nil {
		return nil
	}
	ns := d.Namespace
	var (
		podUID types.UID
		rsName string
		rsUID  types.UID
	)
	v := newView(in)
	if v.newRS != nil {
		rsName, rsUID = v.newRS.Name, v.newRS.UID
	}
	if pod != "" {
		for _, p := range in.Pods {
			if p == nil || p.Name != pod || !sameNamespace(p.Namespace, ns) {
				continue
			}
			podUID = p.UID
			// The pod's own ReplicaSet, which may be an old one.
			if rs := v.ownerOf(metav1.GetControllerOfNoCopy(p)); rs != nil {
				rsName, rsUID = rs.Name, rs.UID
			}
			break
		}
	}

	var picked []*corev1.Event
	for _, e := range in.Events {
		if e == nil {
			continue
		}
		o := e.InvolvedObject
		if !sameNamespace(cmp.Or(o.Namespace, e.Namespace), ns) {
			continue
		}
		var ok bool
		switch o.Kind {
		case "Pod":
			ok = pod != "" && sameObject(o.UID, o.Name, podUID, pod)
		case "ReplicaSet":
			ok = rsName != "" && sameObject(o.UID, o.Name, rsUID, rsName)
		case "Deployment":
			ok = sameObject(o.UID, o.Name, d.UID, d.Name)
		}
		if ok {
			picked = append(picked, e)
		}
	}
	slices.SortStableFunc(picked, func(a, b *corev1.Event) int {
		return cmp.Or(lastSeen(a).Compare(lastSeen(b)), firstSeen(a).Compare(firstSeen(b)), compareVersions(a, b), cmp.Compare(a.Name, b.Name))
	})
	if n > 0 && len(picked) > n {
		picked = picked[len(picked)-n:]
	}
	groups := []EventGroup{
		{Object: "deployment " + d.Name},
		{Object: "replica set " + rsName},
		{Object: "pod " + pod},
	}
	for _, e := range picked {
		i := map[string]int{"Deployment": 0, "ReplicaSet": 1, "Pod": 2}[e.InvolvedObject.Kind]
		groups[i].Lines = append(groups[i].Lines, eventLine(e))
	}
	return slices.DeleteFunc(groups, func(g EventGroup) bool { return len(g.Lines) == 0 })
}

func eventLine(e *corev1.Event) string {
	line := oneLine(e.Reason) + ": " + oneLine(e.Message)
	if e.Reason == "" {
		line = oneLine(e.Message)
	}
	if c := count(e); c > 1 {
		line += fmt.Sprintf(" (x%d)", c)
	}
	return line
}

// aboutPod reports whether an event is about the given pod.
func aboutPod(e *corev1.Event, ns, name string, uid types.UID) bool {
	o := e.InvolvedObject
	return o.Kind == "Pod" && sameNamespace(cmp.Or(o.Namespace, e.Namespace), ns) && sameObject(o.UID, o.Name, uid, name)
}

// firstSeen and lastSeen read the times of an event whichever API wrote it: core/v1 recorders
// set first/lastTimestamp, events.k8s.io/v1 recorders set eventTime and series.
func firstSeen(e *corev1.Event) time.Time {
	switch {
	case !e.FirstTimestamp.IsZero():
		return e.FirstTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	}
	return e.CreationTimestamp.Time
}

func lastSeen(e *corev1.Event) time.Time {
	t := firstSeen(e)
	if e.LastTimestamp.After(t) {
		t = e.LastTimestamp.Time
	}
	if e.Series != nil && e.Series.LastObservedTime.After(t) {
		t = e.Series.LastObservedTime.Time
	}
	return t
}

func count(e *corev1.Event) int32 {
	c := e.Count
	if e.Series != nil && e.Series.Count > c {
		c = e.Series.Count
	}
	return c
}

// compareVersions orders events stored in the same second by their resourceVersion: the API
// calls it opaque, but etcd's revisions increase with every write, and events of one second
// (scaled, created, scheduled) are otherwise in no order at all. Versions that are not numbers
// compare equal.
func compareVersions(a, b *corev1.Event) int {
	x, errA := strconv.ParseUint(a.ResourceVersion, 10, 64)
	y, errB := strconv.ParseUint(b.ResourceVersion, 10, 64)
	if errA != nil || errB != nil {
		return 0
	}
	return cmp.Compare(x, y)
}
