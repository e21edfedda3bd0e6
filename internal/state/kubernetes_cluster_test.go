//go:build devenv

// The Kubernetes backend against the dev cluster's API server. These tests use the backend's
// insides and the conformance suite of backend_test.go, so they stay beside them; the devenv
// tag keeps them out of the unit tests, which run with no dev environment, and e2e's
// TestStateOnDevCluster runs them (go test -tags devenv -run Cluster$ ./internal/state).

package state

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
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

// killedHolderKubernetes: a holder killed with SIGKILL keeps the group locked until its lease
// runs out; the next run then takes it over and says so, naming the killed holder.
func killedHolderKubernetes(t *testing.T, kubeconfig string, k KubeAccess, ns string) {
	ctx := context.Background()
	const lease = 2 * time.Second
	url := "kubernetes://" + ns
	id, cmd := startLockHolder(t, url, "killed", "STATE_TEST_KUBECONFIG="+kubeconfig, "STATE_TEST_LEASE="+lease.String())
	var mu sync.Mutex
	var notices []Notice
	b, err := Open(ctx, url, "killed", k, WithLeaseDuration(lease), WithNotify(func(n Notice) {
		mu.Lock()
		notices = append(notices, n)
		mu.Unlock()
	}))
	if err != nil {
		t.Fatal(err)
	}
	waitRenewed(t, b, id, lease) // the live holder renews past its lease duration
	info, err := b.LockInfo(ctx)
	if err != nil || info == nil || info.ID != id || info.PID != cmd.Process.Pid {
		t.Fatalf("LockInfo = %+v, %v; want lock %s of pid %d", info, err, id, cmd.Process.Pid)
	}
	killHolder(t, cmd)
	var le *LockError
	if _, err := b.Lock(ctx, NewInfo("apply")); !errors.As(err, &le) || le.Holder.ID != id {
		t.Fatalf("Lock right after the kill = %v; want a LockError naming %s", err, id)
	}
	t.Logf("right after the kill: %v", le)
	var newID string
	devtest.WaitFor(t, 3*lease, "the lock taken over", func() (bool, string) {
		newID, err = b.Lock(ctx, NewInfo("apply"))
		if err != nil && !errors.As(err, &le) {
			t.Fatalf("Lock: %v", err)
		}
		return err == nil, fmt.Sprint(err)
	})
	mu.Lock()
	got := append([]Notice(nil), notices...)
	mu.Unlock()
	if len(got) != 1 || got[0].Kind != NoticeTakeover || got[0].Previous == nil || got[0].Previous.ID != id ||
		!strings.Contains(got[0].Message, fmt.Sprintf("pid %d", cmd.Process.Pid)) {
		t.Fatalf("notices = %+v; want one takeover naming pid %d", got, cmd.Process.Pid)
	}
	t.Logf("takeover notice: %s", got[0].Message)
	if err := b.Unlock(ctx, newID); err != nil {
		t.Fatal(err)
	}
}
