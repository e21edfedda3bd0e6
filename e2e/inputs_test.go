package e2e

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestNoTerminalNeedsYes: without a terminal (stdin is not one here) and without --yes, apply,
// destroy, suspend and resume refuse before changing anything, whatever the output format.
func TestNoTerminalNeedsYes(t *testing.T) {
	t.Parallel()
	g := NewGroup(t, "noyes", soloGroup, "solo")
	for _, out := range []string{"json", "text"} {
		r := g.MustRun(1, "apply", "-o", out)
		if !strings.Contains(r.Stderr, "pass --yes") {
			t.Errorf("apply -o %s without --yes: want an error asking for --yes, got %s", out, r)
		}
	}
	if g.NamespaceExists() {
		t.Fatalf("apply without --yes created namespace %s", g.Name)
	}
	if tags := g.RepoTags("solo"); len(tags) != 0 {
		t.Errorf("apply without --yes pushed solo: %v", tags)
	}

	g.MustRun(0, "apply", "--yes")
	g.WriteFile("slipway.yaml", strings.ReplaceAll(strings.Replace(soloGroup, "init: none", "init: none\n    env: {X: changed}", 1), "{{GROUP}}", g.Name))
	before := g.State().State.Serial
	for _, verb := range []string{"apply", "suspend", "resume", "destroy"} {
		for _, out := range []string{"json", "text"} {
			r := g.MustRun(1, verb, "-o", out)
			if !strings.Contains(r.Stderr, "pass --yes") {
				t.Errorf("%s -o %s without --yes: want an error asking for --yes, got %s", verb, out, r)
			}
		}
	}
	d, err := g.Kube.Clientset.AppsV1().Deployments(g.Name).Get(context.Background(), "solo", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("Deployment solo after the refused verbs: %v", err)
	}
	if d.Spec.Replicas == nil || *d.Spec.Replicas != 1 {
		t.Errorf("Deployment solo: replicas %v after the refused verbs, want 1", d.Spec.Replicas)
	}
	for _, c := range d.Spec.Template.Spec.Containers {
		for _, e := range c.Env {
			if e.Name == "X" {
				t.Errorf("Deployment solo has env X=%s: apply without --yes changed it", e.Value)
			}
		}
	}
	if after := g.State().State.Serial; after != before {
		t.Errorf("state serial %d after the refused verbs, want %d", after, before)
	}
}
