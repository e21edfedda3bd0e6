package e2e

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"slipway.dev/slipway/internal/devcluster/devtest"
)

// realLifeGroup is a node with a role, both on the real node. Every container's shell carries
// the group's name as its $0, so its processes are found on this machine by that name.
const realLifeGroup = `group: {{GROUP}}
nodes:
  app:
    image:
      rootfs: nodes/app/rootfs
      command: [/bin/sh, -c, 'trap "exit 0" TERM; httpd -f -p 8080 -h /tmp & wait', {{GROUP}}]
    init: none
    readiness: {tcp: 8080}
    stopGracePeriod: 5s
    state: {size: 1Gi}
    firewall: {served: [8080]}
    {{REAL}}
    roles:
      worker: {replicas: 1, ports: [8080]}
`

// TestRealSuspendResumeDestroy: on real pods, suspend leaves nothing of the group running on
// this machine and resume brings it back on the same data; destroy leaves nothing running and
// the claim's directory goes; with --keep-claims it stays, data and all, and a later apply
// runs on it.
func TestRealSuspendResumeDestroy(t *testing.T) {
	t.Parallel()
	for _, keep := range []bool{false, true} {
		name := "destroy"
		if keep {
			name = "keep-claims"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			g, node := NewRealGroup(t, "real-"+name, realLifeGroup, "app")
			g.MustRun(0, "apply", "--yes")
			g.roRequireReady("app", 1)
			g.roRequireReady("app-worker", 1)
			pod := g.realPod("app", node)
			g.realPod("app-worker", node)
			g.exec(pod.Name, "sh", "-c", "echo kept > /var/lib/data")
			if ps := processesWith(g.Name); len(ps) < 2 {
				t.Fatalf("processes of the group on this machine: %v, want the node's and the role's", ps)
			}
			dir := g.claimDir("app")

			if !keep { // suspend and resume once; the keep-claims run goes straight to destroy
				g.MustRun(0, "suspend", "--yes")
				waitGone(t, g.Name, time.Minute)
				if pods := g.PodUIDs(); len(pods) != 0 {
					t.Errorf("pods after suspend: %v", pods)
				}
				g.MustRun(0, "resume", "--yes")
				g.roRequireReady("app", 1)
				g.roRequireReady("app-worker", 1)
				if got := g.exec(g.realPod("app", node).Name, "cat", "/var/lib/data"); got != "kept\n" {
					t.Errorf("/var/lib/data after resume: %q, want kept", got)
				}
			}

			args := []string{"destroy", "--yes"}
			if keep {
				args = []string{"destroy", "--keep-claims", "--yes"}
			}
			g.MustRun(0, args...)
			waitGone(t, g.Name, time.Minute)
			if !keep {
				devtest.WaitFor(t, time.Minute, "the claim's directory "+dir+" removed", func() (bool, string) {
					_, err := os.Stat(dir)
					return os.IsNotExist(err), "stat: " + errString(err)
				})
				return
			}
			if b, err := os.ReadFile(filepath.Join(dir, "data")); err != nil || string(b) != "kept\n" {
				t.Fatalf("the kept claim's directory: data %q (%v)", b, err)
			}
			g.MustRun(0, "apply", "--yes")
			g.roRequireReady("app", 1)
			if got := g.exec(g.realPod("app", node).Name, "cat", "/var/lib/data"); got != "kept\n" {
				t.Errorf("/var/lib/data on the kept claim after a new apply: %q, want kept", got)
			}
			g.MustRun(0, "destroy", "--yes")
			waitGone(t, g.Name, time.Minute)
		})
	}
}

func errString(err error) string {
	if err == nil {
		return "exists"
	}
	return err.Error()
}

// podEvent is one change of a pod seen by a watch: when, what, and whether it was ready.
type podEvent struct {
	at    time.Time
	typ   watch.EventType
	pod   string
	owner string // the Deployment: app.kubernetes.io/name
	ready bool
	// ended: the pod's phase is Succeeded or Failed: its containers stopped and it holds
	// nothing, as internal/status counts it; the object may outlive that by a moment.
	ended bool
	// deleting: the pod has a deletion timestamp (its stop began).
	deleting bool
}

// watchPods records every change of the namespace's pods until stop is called.
func watchPods(t *testing.T, g *Group) (stop func() []podEvent) {
	t.Helper()
	_, stop = watchPodsSeen(t, g)
	return stop
}

// watchPodsSeen is watchPods with seen, the changes recorded so far, while it goes on.
func watchPodsSeen(t *testing.T, g *Group) (seen, stop func() []podEvent) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w, err := g.Kube.Clientset.CoreV1().Pods(g.Name).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var events []podEvent
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			mu.Lock()
			events = append(events, podEvent{at: time.Now(), typ: ev.Type, pod: p.Name, owner: p.Labels["app.kubernetes.io/name"], ready: roPodReady(p),
				ended: p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed, deleting: p.DeletionTimestamp != nil})
			mu.Unlock()
		}
	}()
	seen = func() []podEvent {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(events)
	}
	return seen, func() []podEvent {
		cancel()
		w.Stop()
		<-done
		return seen()
	}
}

// TestRealRolesStopBeforeAndStartAfter (FR-006a), on real pods: when the node's image changes,
// the role's running pod has stopped (its phase ended, or the pod deleted) before the node's new
// pod is created, and the role's new pod is created only after the node's new pod is Ready.
func TestRealRolesStopBeforeAndStartAfter(t *testing.T) {
	t.Parallel()
	g, node := NewRealGroup(t, "real-roles", realLifeGroup, "app")
	g.MustRun(0, "apply", "--yes")
	g.roRequireReady("app-worker", 1)
	oldApp, oldWorker := g.realPod("app", node).Name, g.realPod("app-worker", node).Name

	g.WriteFile("nodes/app/rootfs/etc/release", "2\n") // a new image
	seen, stop := watchPodsSeen(t, g)
	g.MustRun(0, "apply", "--yes")
	// apply goes on once the old worker's pod ended; the kubelet deletes its object a moment
	// later, which a loaded machine can delay past the end of apply.
	devtest.WaitFor(t, time.Minute, "the deletion of pod "+oldWorker+" seen", func() (bool, string) {
		for _, e := range seen() {
			if e.pod == oldWorker && e.typ == watch.Deleted {
				return true, ""
			}
		}
		return false, "no Deleted event yet"
	})
	events := stop()
	newApp, newWorker := g.realPod("app", node).Name, g.realPod("app-worker", node).Name
	if newApp == oldApp || newWorker == oldWorker {
		t.Fatalf("pods not replaced: app %s -> %s, worker %s -> %s", oldApp, newApp, oldWorker, newWorker)
	}
	first := func(pod string, typ watch.EventType, ready bool) time.Time {
		for _, e := range events {
			if e.pod == pod && (typ == "" || e.typ == typ) && (!ready || e.ready) {
				return e.at
			}
		}
		t.Fatalf("no %s event (ready %v) of pod %s among %d events", typ, ready, pod, len(events))
		return time.Time{}
	}
	workerGone := first(oldWorker, watch.Deleted, false)
	for _, e := range events {
		if e.pod == oldWorker && e.ended && e.at.Before(workerGone) {
			workerGone = e.at // stopped: the object going later is the API's cleanup
			break
		}
	}
	appCreated := first(newApp, "", false)
	appReady := first(newApp, "", true)
	workerCreated := first(newWorker, "", false)
	t.Logf("old worker stopped %s, new app seen %s, ready %s, new worker seen %s",
		workerGone.Format(time.StampMilli), appCreated.Format(time.StampMilli), appReady.Format(time.StampMilli), workerCreated.Format(time.StampMilli))
	if !workerGone.Before(appCreated) {
		t.Errorf("the role's old pod stopped at %s, not before the node's new pod appeared at %s", workerGone, appCreated)
	}
	if !appReady.Before(workerCreated) {
		t.Errorf("the role's new pod appeared at %s, not after the node's new pod was Ready at %s", workerCreated, appReady)
	}
	if ps := processesWith(g.Name); len(ps) < 2 {
		t.Errorf("processes of the group after the apply: %v, want the node's and the role's", ps)
	}
}
