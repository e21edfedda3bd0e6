// Package state_test runs the Kubernetes state backend against the dev cluster's API server:
// the conformance suite of statetest, the takeover of a lease, a killed holder, a 1,000-node
// state, and a Secret of the state's name that someone else made. internal/state runs the same
// suite against its stand-in API server, with no dev environment.
package state_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"slipway.dev/slipway/internal/devcluster/devtest"
	"slipway.dev/slipway/internal/kube"
	"slipway.dev/slipway/internal/state"
	"slipway.dev/slipway/internal/state/statetest"
)

// TestMain doubles as the lock-holding helper process of the killed-holder test.
func TestMain(m *testing.M) {
	statetest.HelperMain()
	os.Exit(m.Run())
}

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
	statetest.Conformance(t, statetest.KubeOpener(c, ns), statetest.Caps{CAS: true, KnowsUnlock: true})
	groups, err := statetest.KubeOpener(c, ns)(t, "").(state.Lister).List(context.Background())
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
	statetest.Takeover(t, func(t testing.TB, group string, notify func(state.Notice)) state.Backend {
		return statetest.KubeOpener(c, ns, state.WithLeaseDuration(lease), state.WithNotify(notify))(t, group)
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
	b := statetest.KubeOpener(c, ns)(t, "big")
	d := statetest.BigDocument("big", 1000)
	start := time.Now()
	if err := b.Write(ctx, d); err != nil {
		t.Fatal(err)
	}
	wrote := time.Since(start)
	got, err := b.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(d, got); diff != "" {
		t.Fatalf("read back (-want +got):\n%s", diff)
	}
	s, err := c.StateSecrets(ns).Get(ctx, "slipway-state-big")
	if err != nil {
		t.Fatal(err)
	}
	size := 0
	for _, v := range s.Data {
		size += len(v)
	}
	t.Logf("1,000-node state: Secret data %d bytes; write %s, read %s", size, wrote, time.Since(start)-wrote)
}

// killedHolderKubernetes: a holder killed with SIGKILL keeps the group locked until its lease
// runs out; the next run then takes it over and says so, naming the killed holder.
func killedHolderKubernetes(t *testing.T, kubeconfig string, k state.KubeAccess, ns string) {
	ctx := context.Background()
	const lease = 2 * time.Second
	url := "kubernetes://" + ns
	id, cmd := statetest.StartLockHolder(t, url, "killed", "STATE_TEST_KUBECONFIG="+kubeconfig, "STATE_TEST_LEASE="+lease.String())
	var mu sync.Mutex
	var notices []state.Notice
	b, err := state.Open(ctx, url, "killed", k, state.WithLeaseDuration(lease), state.WithNotify(func(n state.Notice) {
		mu.Lock()
		notices = append(notices, n)
		mu.Unlock()
	}))
	if err != nil {
		t.Fatal(err)
	}
	statetest.WaitRenewed(t, b, id, lease) // the live holder renews past its lease duration
	info, err := b.LockInfo(ctx)
	if err != nil || info == nil || info.ID != id || info.PID != cmd.Process.Pid {
		t.Fatalf("LockInfo = %+v, %v; want lock %s of pid %d", info, err, id, cmd.Process.Pid)
	}
	statetest.KillHolder(t, cmd)
	var le *state.LockError
	if _, err := b.Lock(ctx, state.NewInfo("apply")); !errors.As(err, &le) || le.Holder.ID != id {
		t.Fatalf("Lock right after the kill = %v; want a LockError naming %s", err, id)
	}
	t.Logf("right after the kill: %v", le)
	var newID string
	devtest.WaitFor(t, 3*lease, "the lock taken over", func() (bool, string) {
		newID, err = b.Lock(ctx, state.NewInfo("apply"))
		if err != nil && !errors.As(err, &le) {
			t.Fatalf("Lock: %v", err)
		}
		return err == nil, fmt.Sprint(err)
	})
	mu.Lock()
	got := append([]state.Notice(nil), notices...)
	mu.Unlock()
	if len(got) != 1 || got[0].Kind != state.NoticeTakeover || got[0].Previous == nil || got[0].Previous.ID != id ||
		!strings.Contains(got[0].Message, fmt.Sprintf("pid %d", cmd.Process.Pid)) {
		t.Fatalf("notices = %+v; want one takeover naming pid %d", got, cmd.Process.Pid)
	}
	t.Logf("takeover notice: %s", got[0].Message)
	if err := b.Unlock(ctx, newID); err != nil {
		t.Fatal(err)
	}
}

// TestKubernetesForeignSecretCluster: a Secret named slipway-state-<group> that slipway did not
// make is neither read, overwritten nor deleted: each is refused, naming it (issue 35, item 18).
func TestKubernetesForeignSecretCluster(t *testing.T) {
	ctx := context.Background()
	_, c, ns := clusterNamespace(t)
	theirs := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "slipway-state-demo", Namespace: ns,
		Labels: map[string]string{"app": "theirs"}}, Data: map[string][]byte{"tfstate": []byte("theirs")}}
	if _, err := c.Clientset.CoreV1().Secrets(ns).Create(ctx, theirs, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	b := statetest.KubeOpener(c, ns)(t, "demo")
	want := "state demo: secret " + ns + "/slipway-state-demo exists and slipway did not make it for group demo (it lacks the labels app.kubernetes.io/component=state, app.kubernetes.io/managed-by=slipway, slipway.dev/group=demo)"
	check := func(what string, err error) {
		t.Helper()
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%s = %v, want %s…", what, err, want)
		}
	}
	_, err := b.Read(ctx)
	check("Read", err)
	check("Write", b.Write(ctx, &state.Document{}))
	check("Delete", b.Delete(ctx))
	got, err := c.Clientset.CoreV1().Secrets(ns).Get(ctx, "slipway-state-demo", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the Secret is gone: %v", err)
	}
	if string(got.Data["tfstate"]) != "theirs" || got.Labels["app"] != "theirs" {
		t.Errorf("the Secret was changed: labels %v, data %q", got.Labels, got.Data["tfstate"])
	}
}
