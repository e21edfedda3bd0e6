package cli

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"slipway.dev/slipway/internal/image"
	"slipway.dev/slipway/internal/kube"
)

// Without a kubeconfig or a registry, the error says what to run next: the dev environment's
// exports when one runs (e2e's TestNextStepWithDevEnvironment), else how to start one.
func TestNextStepWithoutDevEnvironment(t *testing.T) {
	home, none := t.TempDir(), t.TempDir() // no dev environment runs in none
	defaultConfig := filepath.Join(home, ".kube", "config")
	missing := filepath.Join(none, "missing")
	tests := []struct {
		name string
		env  []string
		args []string
		want string
	}{
		{"no kubeconfig at all", []string{"KUBE_CONFIG_PATH=", "KUBECONFIG="}, []string{"status"},
			"kubeconfig " + defaultConfig + ": stat " + defaultConfig + ": no such file or directory; " +
				`set KUBECONFIG to your cluster's kubeconfig, or start the dev environment: eval "$(slipway dev up)"`},
		{"KUBECONFIG lists no file that exists", []string{"KUBE_CONFIG_PATH=", "KUBECONFIG=" + missing}, []string{"status"},
			"kubeconfig " + missing + ": none of its files exists or holds a cluster; " +
				`set KUBECONFIG to your cluster's kubeconfig, or start the dev environment: eval "$(slipway dev up)"`},
		{"no registry: plan", []string{"K8S_REGISTRY="}, []string{"plan"},
			image.ErrNoRegistry.Error() + `, or start the dev environment: eval "$(slipway dev up)"`},
		{"no registry: images push", []string{"K8S_REGISTRY="}, []string{"images", "push"},
			image.ErrNoRegistry.Error() + `, or start the dev environment: eval "$(slipway dev up)"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := append([]string{"SLIPWAY_DEV_DIR=" + none, "HOME=" + home}, tt.env...)
			err := runRoot(t, env, tt.args...)
			if err == nil {
				t.Fatal("no error")
			}
			if diff := cmp.Diff(tt.want, err.Error()); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
			var nk *kube.NoKubeconfigError
			if !errors.As(err, &nk) && !errors.Is(err, image.ErrNoRegistry) {
				t.Errorf("error %v is neither a kube.NoKubeconfigError nor image.ErrNoRegistry", err)
			}
		})
	}
}
