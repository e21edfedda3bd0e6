package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
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
	g.MustRun(0, "destroy", "--yes", "-o", "json")
}

// TestKubeconfigList: a colon-separated KUBECONFIG is merged as kubectl merges it (the first
// file's current context wins, --context picks from every file); --kubeconfig and
// KUBE_CONFIG_PATH stay one file each.
func TestKubeconfigList(t *testing.T) {
	t.Parallel()
	g := NewGroup(t, "kcfg", soloGroup, "solo")
	dev, err := clientcmd.LoadFromFile(g.Env.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	devContext := dev.CurrentContext
	// elsewhere is a kubeconfig whose current context is a cluster nobody serves.
	elsewhere := filepath.Join(t.TempDir(), "elsewhere")
	if err := os.WriteFile(elsewhere, []byte(`apiVersion: v1
kind: Config
current-context: elsewhere
clusters: [{name: elsewhere, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: elsewhere, user: {token: x}}]
contexts: [{name: elsewhere, context: {cluster: elsewhere, user: elsewhere}}]
`), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(t.TempDir(), "missing")
	list := elsewhere + ":" + g.Env.Kubeconfig
	tests := []struct {
		name string
		env  []string
		args []string
		code int
		want string // in stderr, for a failure
	}{
		{"--context picks the second file's context", []string{"KUBECONFIG=" + list}, []string{"plan", "--context", devContext}, 0, ""},
		{"the first file's current context", []string{"KUBECONFIG=" + list}, []string{"plan"}, 1, "127.0.0.1:1"},
		{"a missing file is skipped", []string{"KUBECONFIG=" + missing + ":" + g.Env.Kubeconfig}, []string{"plan"}, 0, ""},
		{"KUBE_CONFIG_PATH is one file", []string{"KUBE_CONFIG_PATH=" + list}, []string{"plan"}, 1, "kubeconfig " + list + ": stat " + list},
		{"--kubeconfig is one file", []string{"KUBECONFIG=" + list}, []string{"plan", "--kubeconfig", g.Env.Kubeconfig}, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g.extraEnv = append([]string{"KUBE_CONFIG_PATH=", "KUBECONFIG="}, tt.env...)
			r := g.MustRun(tt.code, tt.args...)
			if tt.want != "" && !strings.Contains(r.Stderr, tt.want) {
				t.Errorf("want stderr to contain %q, got %s", tt.want, r)
			}
		})
	}
}
