package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"slipway.dev/slipway/internal/kube"
)

func TestKubeconfigSource(t *testing.T) {
	home := t.TempDir()
	list := "/k/a" + string(filepath.ListSeparator) + "/k/b"
	tests := []struct {
		name                 string
		flag, path, variable string
		want                 kube.Kubeconfig
	}{
		{"flag is one file", "/k/flag", "/k/path", list, kube.Kubeconfig{Explicit: "/k/flag"}},
		{"KUBE_CONFIG_PATH is one file", "", list, list, kube.Kubeconfig{Explicit: list}},
		{"KUBECONFIG is a list", "", "", list, kube.Kubeconfig{Precedence: []string{"/k/a", "/k/b"}}},
		{"empty entries dropped", "", "", ":/k/a::", kube.Kubeconfig{Precedence: []string{"/k/a"}}},
		{"default", "", "", "", kube.Kubeconfig{Explicit: filepath.Join(home, ".kube", "config")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("HOME", home)
			t.Setenv("KUBE_CONFIG_PATH", tt.path)
			t.Setenv("KUBECONFIG", tt.variable)
			g := &Globals{Kubeconfig: tt.flag}
			if diff := cmp.Diff(tt.want, g.KubeconfigSource()); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestKubeconfigListMerged: with KUBECONFIG=a:b, --context reaches a context only b defines,
// and without it the first file's current context is used (neither cluster serves: the error
// says which one was dialled).
func TestKubeconfigListMerged(t *testing.T) {
	dir := t.TempDir()
	write := func(name, port string) string {
		p := filepath.Join(dir, name)
		doc := "apiVersion: v1\nkind: Config\ncurrent-context: " + name + "\n" +
			"clusters: [{name: " + name + ", cluster: {server: \"https://127.0.0.1:" + port + "\"}}]\n" +
			"users: [{name: " + name + ", user: {token: x}}]\n" +
			"contexts: [{name: " + name + ", context: {cluster: " + name + ", user: " + name + "}}]\n"
		if err := os.WriteFile(p, []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	list := write("a", "2") + string(filepath.ListSeparator) + write("b", "3")
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"current context of the first file", []string{"status"}, "127.0.0.1:2"},
		{"--context from the second file", []string{"--context", "b", "status"}, "127.0.0.1:3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := runRoot(t, []string{"KUBE_CONFIG_PATH=", "KUBECONFIG=" + list}, tt.args...)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want one naming %s", err, tt.want)
			}
		})
	}
}
