package kube_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"slipway.dev/slipway/internal/kube"
)

// kubeconfigFile writes a kubeconfig with one cluster, user and context per name (server
// https://<name>.example:6443) and the given current context.
func kubeconfigFile(t *testing.T, dir, file, current string, names ...string) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: Config\ncurrent-context: " + current + "\nclusters:\n")
	for _, n := range names {
		b.WriteString("- name: " + n + "\n  cluster: {server: https://" + n + ".example:6443}\n")
	}
	b.WriteString("users:\n")
	for _, n := range names {
		b.WriteString("- name: " + n + "\n  user: {token: t-" + n + "}\n")
	}
	b.WriteString("contexts:\n")
	for _, n := range names {
		b.WriteString("- name: " + n + "\n  context: {cluster: " + n + ", user: " + n + ", namespace: default}\n")
	}
	p := filepath.Join(dir, file)
	if err := os.WriteFile(p, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestOpenMergesKubeconfigList(t *testing.T) {
	dir := t.TempDir()
	a := kubeconfigFile(t, dir, "a", "alpha", "alpha", "shared")
	b := kubeconfigFile(t, dir, "b", "beta", "beta")
	// shared in c has another server: the first file that names it wins.
	c := filepath.Join(dir, "c")
	if err := os.WriteFile(c, []byte("apiVersion: v1\nkind: Config\nclusters:\n- name: shared\n  cluster: {server: https://other.example:6443}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing")
	tests := []struct {
		name     string
		k        kube.Kubeconfig
		context  string
		wantHost string
		wantErr  string
	}{
		{"current context of the first file", kube.Kubeconfig{Precedence: []string{a, b}}, "", "https://alpha.example:6443", ""},
		{"current context of the first file that sets one", kube.Kubeconfig{Precedence: []string{c, b, a}}, "", "https://beta.example:6443", ""},
		{"context from the second file", kube.Kubeconfig{Precedence: []string{a, b}}, "beta", "https://beta.example:6443", ""},
		{"first definition wins", kube.Kubeconfig{Precedence: []string{a, c}}, "shared", "https://shared.example:6443", ""},
		{"missing file skipped", kube.Kubeconfig{Precedence: []string{missing, b}}, "", "https://beta.example:6443", ""},
		{"no file exists", kube.Kubeconfig{Precedence: []string{missing}}, "", "", "kubeconfig " + missing + ": none of its files exists or holds a cluster"},
		{"unknown context", kube.Kubeconfig{Precedence: []string{a, b}}, "gamma", "", `context "gamma" does not exist`},
		{"explicit file is one file", kube.Kubeconfig{Explicit: a}, "beta", "", `context "beta" does not exist`},
		{"explicit file must exist", kube.Kubeconfig{Explicit: missing}, "", "", "kubeconfig " + missing + ": stat " + missing},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := kube.Open(tt.k, tt.context)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Config.Host != tt.wantHost {
				t.Errorf("host %s, want %s", c.Config.Host, tt.wantHost)
			}
		})
	}
}
