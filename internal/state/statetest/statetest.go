// Package statetest is test support for the state backends, shared by state's own tests and
// those of e2e/state: the conformance suite every backend passes, the takeover of a lease a
// killed holder left, a lock-holding helper process, and a realistic large document. It
// reaches the backends through state's exported API only.
package statetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	"slipway.dev/slipway/internal/devcluster/devtest"
	"slipway.dev/slipway/internal/event"
	"slipway.dev/slipway/internal/kube"
	"slipway.dev/slipway/internal/state"
	"slipway.dev/slipway/internal/testkit"
)

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// BigDocument is a realistic state of n nodes, each with two roles, digests random.
func BigDocument(group string, n int) *state.Document {
	d := &state.Document{Group: group, Namespace: group, Nodes: map[string]*state.NodeState{}}
	now := time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)
	for i := range n {
		name := fmt.Sprintf("node-%d", i)
		ref := "registry.example.org:5000/" + group + "/" + name
		img := state.ImageRecord{Ref: ref, Tag: randHex(6), Digest: "sha256:" + randHex(32)}
		ns := &state.NodeState{
			MachineID:     uuid.NewString(),
			Image:         img,
			PreviousReady: ref + "@sha256:" + randHex(32),
			LastRollout:   &event.Rollout{Result: event.RolloutReady, Time: now, Digest: img.Digest},
			Roles:         map[string]*state.RoleState{},
		}
		for _, r := range []string{"worker", "sso"} {
			ns.Roles[r] = &state.RoleState{MachineID: uuid.NewString(), Replicas: 2,
				Image: state.ImageRecord{Ref: ref + "-" + r, Tag: randHex(6), Digest: "sha256:" + randHex(32)}}
		}
		d.Nodes[name] = ns
	}
	return d
}

// KubeOpener opens the Kubernetes backend of namespace ns through k; the backend stops
// renewing its lease when the test ends.
func KubeOpener(k state.KubeAccess, ns string, opts ...state.Option) Opener {
	return func(t testing.TB, group string) state.Backend {
		b, err := state.Open(context.Background(), "kubernetes://"+ns, group, k, opts...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { StopRenewal(b) })
		return b
	}
}

// WaitRenewed waits until the lock id, as b reads it, is still held after its first lease ran
// out: its holder renewed it.
func WaitRenewed(t testing.TB, b state.Backend, id string, lease time.Duration) {
	t.Helper()
	ctx := context.Background()
	first, err := b.LockInfo(ctx)
	if err != nil || first == nil || first.ID != id || first.Expires.IsZero() {
		t.Fatalf("LockInfo = %+v, %v; want lock %s with a lease", first, err, id)
	}
	devtest.WaitFor(t, 3*lease, "the lock held past its first lease", func() (bool, string) {
		info, err := b.LockInfo(ctx)
		held := err == nil && info != nil && info.ID == id && time.Now().After(first.Expires) && info.Expires.After(time.Now())
		return held, fmt.Sprintf("%+v, %v (first lease until %s)", info, err, first.Expires)
	})
}

// StopRenewal halts a backend's lease renewal without unlocking: what a killed process does.
// A backend that renews no lease (another kind, or one opened without a group) is left as it is.
func StopRenewal(b state.Backend) {
	if f, ok := b.(interface{ Forget() }); ok {
		f.Forget()
	}
}

// Takeover: a holder that stops renewing (killed) keeps the group locked for the lease
// duration; then the next Lock takes it over and says so, naming the old holder, and the old
// holder's backend, if it were still running, could no longer write.
func Takeover(t *testing.T, open func(t testing.TB, group string, notify func(state.Notice)) state.Backend, lease time.Duration) {
	ctx := context.Background()
	old := open(t, "takeover", nil)
	oldInfo := state.NewInfo("apply")
	oldInfo.PID = 4242
	oldID, err := old.Lock(ctx, oldInfo)
	if err != nil {
		t.Fatal(err)
	}
	if err := old.Write(ctx, &state.Document{}); err != nil {
		t.Fatal(err)
	}
	// Renewal keeps it held past the lease duration while the holder runs.
	WaitRenewed(t, old, oldID, lease)
	var le *state.LockError
	if _, err := open(t, "takeover", nil).Lock(ctx, state.NewInfo("apply")); !errors.As(err, &le) || le.Holder.ID != oldID {
		t.Fatalf("Lock while the holder renews = %v; want a state.LockError naming %s", err, oldID)
	}
	StopRenewal(old) // killed
	var mu sync.Mutex
	var notices []state.Notice
	next := open(t, "takeover", func(n state.Notice) { mu.Lock(); notices = append(notices, n); mu.Unlock() })
	var id string
	devtest.WaitFor(t, 3*lease, "the lock taken over", func() (bool, string) {
		id, err = next.Lock(ctx, state.NewInfo("apply"))
		if err != nil && !errors.As(err, &le) {
			t.Fatalf("Lock: %v", err)
		}
		return err == nil, fmt.Sprint(err)
	})
	mu.Lock()
	defer mu.Unlock()
	if len(notices) != 1 || notices[0].Kind != state.NoticeTakeover || notices[0].Previous == nil || notices[0].Previous.ID != oldID ||
		!strings.Contains(notices[0].Message, "pid 4242") {
		t.Fatalf("notices = %+v; want one takeover naming the old holder (pid 4242, %s)", notices, oldID)
	}
	t.Logf("notice: %s", notices[0].Message)
	if err := next.Unlock(ctx, id); err != nil {
		t.Fatal(err)
	}
}

// HelperMain makes a test binary double as a lock-holding helper process: call it first in
// TestMain. With STATE_TEST_HELPER=lock the binary takes the lock of STATE_TEST_URL /
// STATE_TEST_GROUP (through STATE_TEST_KUBECONFIG's cluster for kubernetes://, with lease
// STATE_TEST_LEASE), prints "LOCKED <id>" and waits to be killed; otherwise HelperMain
// returns.
func HelperMain() {
	if os.Getenv("STATE_TEST_HELPER") == "lock" {
		os.Exit(lockHelper())
	}
}

func lockHelper() int {
	ctx := context.Background()
	var k state.KubeAccess
	if p := os.Getenv("STATE_TEST_KUBECONFIG"); p != "" {
		c, err := kube.New(p, "")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		k = c
	}
	lease, _ := time.ParseDuration(os.Getenv("STATE_TEST_LEASE"))
	b, err := state.Open(ctx, os.Getenv("STATE_TEST_URL"), os.Getenv("STATE_TEST_GROUP"), k, state.WithLeaseDuration(max(lease, time.Second)))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	id, err := b.Lock(ctx, state.NewInfo("apply"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Printf("LOCKED %s\n", id)
	select {} // until killed
}

// StartLockHolder runs the helper (the test binary itself, see HelperMain) and returns its lock ID and process, once it holds the lock.
func StartLockHolder(t testing.TB, url, group string, env ...string) (string, *exec.Cmd) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), append([]string{"STATE_TEST_HELPER=lock", "STATE_TEST_URL=" + url, "STATE_TEST_GROUP=" + group}, env...)...)
	cmd.Stderr = os.Stderr
	id := testkit.StartHelper(t, cmd, "LOCKED ")
	return id, cmd
}

// KillHolder kills the helper with SIGKILL: no unlock, no cleanup.
func KillHolder(t testing.TB, cmd *exec.Cmd) {
	t.Helper()
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
}
