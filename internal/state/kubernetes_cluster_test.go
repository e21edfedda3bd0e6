package state

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"slipway.dev/slipway/internal/devcluster/devtest"
	"slipway.dev/slipway/internal/kube"
)

// clusterNamespace connects to the dev cluster and gives the test its own namespace, removed
// afterwards.
func clusterNamespace(t *testing.T) (string, *kube.Client, string) {
	t.Helper()
	env := devtest.Env(t)
	c, err := kube.New(env.Kubeconfig, "")
	if err != nil {
		t.Fatal(err)
	}
	ns := "state-" + strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()))
	if len(ns) > 50 {
		ns = ns[:50]
	}
	ns = strings.TrimRight(ns, "-") + "-" + uuid.NewString()[:8]
	if err := c.EnsureNamespace(context.Background(), ns, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		out, err := exec.Command(filepath.Join(env.BinDir, "kubectl"), "--kubeconfig", env.Kubeconfig,
			"delete", "namespace", ns, "--wait=false").CombinedOutput()
		if err != nil {
			t.Logf("delete namespace %s: %v: %s", ns, err, out)
		}
	})
	return env.Kubeconfig, c, ns
}

func TestKubernetesBackendCluster(t *testing.T) {
	_, c, ns := clusterNamespace(t)
	testBackend(t, kubeOpener(c, ns), caps{cas: true, knowsUnlock: true})
	groups, err := kubeOpener(c, ns)(t, "").(Lister).List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("groups in %s: %v", ns, groups)
	if strings.Join(groups, ",") != "cas,torn" { // rwd deleted its state, lockers wrote none
		t.Fatalf("List = %v", groups)
	}
}

func TestKubernetesTakeoverCluster(t *testing.T) {
	_, c, ns := clusterNamespace(t)
	lease := 2 * time.Second
	testTakeover(t, func(t testing.TB, group string, notify func(Notice)) Backend {
		return kubeOpener(c, ns, WithLeaseDuration(lease), WithNotify(notify))(t, group)
	}, lease)
}

func TestKubernetesKilledHolderCluster(t *testing.T) {
	kc, c, ns := clusterNamespace(t)
	killedHolderKubernetes(t, kc, c, ns)
}

// TestKubernetesSize1000NodesCluster writes a 1,000-node state to a real Secret and reads it back.
func TestKubernetesSize1000NodesCluster(t *testing.T) {
	ctx := context.Background()
	_, c, ns := clusterNamespace(t)
	b := kubeOpener(c, ns)(t, "big")
	d := bigDocument("big", 1000)
	start := time.Now()
	if err := b.Write(ctx, d); err != nil {
		t.Fatal(err)
	}
	wrote := time.Since(start)
	got, err := b.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diff := diffDocs(d, got); diff != "" {
		t.Fatalf("read back (-want +got):\n%s", diff)
	}
	s, err := c.StateSecrets(ns).Get(ctx, "slipway-state-big")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("1,000-node state: Secret data %d bytes; write %s, read %s", len(s.Data[secretKey]), wrote, time.Since(start)-wrote)
}
