package e2e

// Issue 7: suspend scales a group's Deployments to 0 with its claims kept Bound; resume brings
// them back on the same templates and images.

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestSuspendResume(t *testing.T) {
	t.Parallel()
	g := NewGroup(t, "ro-suspend", helloGroup, "web", "db")
	g.MustRun(0, "apply", "--yes")
	deps := []string{"web", "web-worker", "db"}
	want := map[string]int{"web": 1, "web-worker": 2, "db": 1}
	templates := map[string]corev1.PodTemplateSpec{}
	for _, d := range deps {
		g.roRequireReady(d, want[d])
		templates[d] = g.roDeployment(d).Spec.Template
	}
	digests := map[string]string{}
	for n, s := range g.roState().State.Nodes {
		digests[n] = s.Image.Digest
	}

	// Watch the claims the whole time: they must stay Bound.
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var mu sync.Mutex
	var unbound []string
	checks := 0
	wg.Go(func() {
		for ctx.Err() == nil {
			l, err := g.Kube.Clientset.CoreV1().PersistentVolumeClaims(g.Name).List(ctx, metav1.ListOptions{})
			mu.Lock()
			if err == nil {
				checks++
				if len(l.Items) != 2 {
					unbound = append(unbound, fmt.Sprintf("%d claims, want 2", len(l.Items)))
				}
				for _, c := range l.Items {
					if c.Status.Phase != corev1.ClaimBound || c.DeletionTimestamp != nil {
						unbound = append(unbound, c.Name+": "+string(c.Status.Phase))
					}
				}
			}
			mu.Unlock()
			select {
			case <-ctx.Done():
			case <-time.After(200 * time.Millisecond):
			}
		}
	})

	g.MustRun(0, "suspend", "--yes")
	for _, d := range deps {
		if got := *g.roDeployment(d).Spec.Replicas; got != 0 {
			t.Errorf("deployment %s: %d replicas while suspended, want 0", d, got)
		}
	}
	pods, err := g.Kube.Clientset.CoreV1().Pods(g.Name).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 0 {
		t.Errorf("%d pods while suspended, want 0: %v", len(pods.Items), roPodNames(pods.Items))
	}
	p := g.MustRun(0, "plan", "--detailed-exitcode")
	if !strings.Contains(p.Stdout, "Group "+g.Name+" is suspended: its Deployments stay at 0 replicas until `slipway resume`.") ||
		!strings.Contains(p.Stdout, "No changes.") || strings.Contains(p.Stdout, "drift") {
		t.Errorf("plan while suspended: want the group shown as suspended and no changes:\n%s", p)
	}
	s := g.roStatus()
	if !s.Suspended {
		t.Errorf("status -o json while suspended: suspended = false")
	}
	for _, n := range s.Nodes {
		if !n.Suspended || n.Ready != 0 || n.Replicas != 0 {
			t.Errorf("status while suspended: node %s: %+v", n.Node, n)
		}
	}

	g.MustRun(0, "resume", "--yes")
	cancel()
	wg.Wait()
	mu.Lock()
	if checks < 3 || len(unbound) > 0 {
		t.Errorf("claims during suspend and resume (%d checks): not Bound: %v", checks, unbound)
	}
	mu.Unlock()
	for _, d := range deps {
		g.roRequireReady(d, want[d])
		if diff := cmp.Diff(templates[d], g.roDeployment(d).Spec.Template); diff != "" {
			t.Errorf("deployment %s after resume: template differs (-before +after):\n%s", d, diff)
		}
	}
	for n, s := range g.roState().State.Nodes {
		if s.Image.Digest != digests[n] || s.Suspended {
			t.Errorf("state after resume: node %s: digest %s (was %s), suspended %v", n, s.Image.Digest, digests[n], s.Suspended)
		}
	}
	p = g.MustRun(0, "plan", "--detailed-exitcode")
	if strings.Contains(p.Stdout, "suspended") {
		t.Errorf("plan after resume still says suspended:\n%s", p)
	}
}
