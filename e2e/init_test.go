package e2e

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestInitThenApply: what `slipway init` writes (one node, and --example full) validates and
// deploys on the dev environment as it is: every pod Ready, then plan says No changes.
func TestInitThenApply(t *testing.T) {
	t.Parallel()
	tests := []struct {
		example string
		pods    map[string]int // Ready pods per Deployment
	}{
		{"one", map[string]int{"web": 1}},
		{"full", map[string]int{"web": 1, "web-worker": 2, "web-sso": 1}},
	}
	for _, tt := range tests {
		t.Run(tt.example, func(t *testing.T) {
			t.Parallel()
			g := NewGroup(t, "init-"+tt.example, "")
			if err := os.Remove(filepath.Join(g.Dir, "slipway.yaml")); err != nil {
				t.Fatal(err)
			}
			g.MustRun(0, "init", ".", "--example", tt.example, "--group", g.Name)
			g.MustRun(0, "validate")
			g.MustRun(0, "apply", "--yes")
			pods, err := g.Kube.Clientset.CoreV1().Pods(g.Name).List(context.Background(), metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]int{}
			for _, p := range pods.Items {
				for _, c := range p.Status.Conditions {
					if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
						got[p.Labels["app.kubernetes.io/name"]]++
					}
				}
			}
			if diff := cmp.Diff(tt.pods, got); diff != "" {
				t.Errorf("Ready pods per Deployment (-want +got):\n%s", diff)
			}
			g.MustRun(0, "plan", "-detailed-exitcode")
		})
	}
}
