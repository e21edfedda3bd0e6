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

// `dev up` without --publish starts a second cluster beside the shared one (whose publishing
// parts hold their fixed ports): the cluster and registry answer, nothing of MetalLB or Envoy
// Gateway is there, `dev up --core` finds it running, `dev env` prints the same environment,
// a group with publish: aimed at it is refused with the command that adds those parts, and
// `dev down` stops it.
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
	up, err := run("up")
	if err != nil {
		t.Fatalf("dev up: %v", err)
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
		t.Errorf("dev up printed %q; want a kubeconfig under %s and no gateway", up, dir)
	}
	if again, err := run("up", "--core"); err != nil || again != up {
		t.Errorf("dev up --core on the running cluster: %v, printed %q; want %q", err, again, up)
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
	publishRefused(t, dir, e)
}

// publishRefused: plan of a group with publish: on the core cluster in dir says to run
// dev up --publish.
func publishRefused(t *testing.T, dir string, e *devcluster.Env) {
	g := &Group{t: t, Name: uniqueName("pubcore"), Dir: t.TempDir(), Env: e, Kubeconfig: e.Kubeconfig,
		extraEnv: []string{"SLIPWAY_DEV_DIR=" + dir, "SLIPWAY_TSIG_SECRET_FILE=" + e.TSIGSecretFile}}
	g.WriteFile("nodes/web/rootfs/etc/hostname", "web\n")
	g.WriteFile("slipway.yaml", "group: "+g.Name+"\n"+
		"publish: {zone: dev.test, dns: {server: 127.0.0.1:53, key: slipway-dev}}\n"+
		"nodes:\n  web:\n    image: {rootfs: nodes/web/rootfs}\n"+
		"    firewall: {served: [80], published: [80]}\n    publishedNames: [www.dev.test]\n")
	r := g.MustRun(1, "plan")
	want := "the dev environment in " + dir + " runs without its publishing parts"
	if !strings.Contains(r.Stderr, want) || !strings.Contains(r.Stderr, `run: eval "$(slipway dev up --publish)"`) {
		t.Errorf("plan of a publishing group on a core cluster: %s\nwant %q and the dev up --publish command", r, want)
	}
}
