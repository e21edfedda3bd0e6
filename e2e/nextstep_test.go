package e2e

import (
	"path/filepath"
	"strings"
	"testing"

	"slipway.dev/slipway/internal/image"
)

// TestNextStepWithDevEnvironment: without a kubeconfig or a registry while a dev environment
// runs, the error names the environment and says to load its exports (the case without one is
// internal/cli's TestNextStepWithoutDevEnvironment).
func TestNextStepWithDevEnvironment(t *testing.T) {
	g := NewGroup(t, "nextstep", helloGroup, "web", "db")
	home := t.TempDir()
	defaultConfig := filepath.Join(home, ".kube", "config")
	tests := []struct {
		name string
		env  []string
		args []string
		want string
	}{
		{"no kubeconfig", []string{"KUBE_CONFIG_PATH=", "KUBECONFIG="}, []string{"status"},
			"kubeconfig " + defaultConfig + ": stat " + defaultConfig + ": no such file or directory; " +
				"a dev environment runs in " + g.Env.Dir + `: run: eval "$(slipway dev env)"`},
		{"no registry", []string{"K8S_REGISTRY="}, []string{"render"},
			image.ErrNoRegistry.Error() + "; the dev environment's is " + g.Env.Registry + `: run: eval "$(slipway dev env)"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			run := *g
			run.t, run.extraEnv = t, append([]string{"SLIPWAY_DEV_DIR=" + g.Env.Dir, "HOME=" + home}, tt.env...)
			r := run.Run(tt.args...)
			if got := strings.TrimSpace(r.Stderr); r.Code == 0 || got != "error: "+tt.want {
				t.Errorf("slipway %s: want a failure saying\nerror: %s\ngot %s", strings.Join(tt.args, " "), tt.want, r)
			}
		})
	}
}
