package e2e

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"slipway.dev/slipway/internal/devcluster"
	"slipway.dev/slipway/internal/kube"
)

// `dev up --core` starts a second cluster beside the shared one (whose publishing parts hold
// their fixed ports): the cluster and registry answer, nothing of MetalLB or Envoy Gateway is
// there, `dev env` prints the same environment, and `dev down` stops it.
func TestDevUpCore(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "dev")
	run := func(args ...string) (string, error) {
		cmd := exec.Command(binary, append([]string{"--dir", dir, "dev"}, args...)...)
		out, err := cmd.Output()
		if ee, ok := err.(*exec.ExitError); ok {
			t.Logf("slipway dev %s: %s", strings.Join(args, " "), ee.Stderr)
		}
		return string(out), err
	}
	up, err := run("up", "--core")
	if err != nil {
		t.Fatalf("dev up --core: %v", err)
	}
	t.Cleanup(func() {
		if _, err := run("down"); err != nil {
			t.Errorf("dev down: %v", err)
		}
		if out, err := run("env"); err == nil {
			t.Errorf("dev env after dev down printed %q; want an error", out)
		}
	})
	if !strings.Contains(up, "KUBECONFIG="+dir) || strings.Contains(up, "K8S_GATEWAY=") {
		t.Errorf("dev up --core printed %q; want a kubeconfig under %s and no gateway", up, dir)
	}
	env, err := run("env")
	if err != nil || env != up {
		t.Errorf("dev env: %v, printed %q; want %q", err, env, up)
	}
	e, err := devcluster.Load(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	k, err := kube.New(e.Kubeconfig, "")
	if err != nil {
		t.Fatal(err)
	}
	nss, err := k.Clientset.CoreV1().Namespaces().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list namespaces of the core cluster: %v", err)
	}
	for _, ns := range nss.Items {
		if ns.Name == devcluster.MetalLBNamespace || strings.HasPrefix(ns.Name, "envoy-gateway") {
			t.Errorf("core cluster has namespace %s of the publishing parts", ns.Name)
		}
	}
}
