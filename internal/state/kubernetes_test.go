package state_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	"slipway.dev/slipway/internal/devcluster/devtest"
	"slipway.dev/slipway/internal/kube"
	"slipway.dev/slipway/internal/state"
	"slipway.dev/slipway/internal/state/statetest"
)

// fakeKube is an in-memory API server for the state calls: resourceVersion preconditions,
// AlreadyExists and NotFound as the real one answers them. The same suite runs against the dev
// cluster in e2e/state.
type fakeKube struct {
	api     fakeAPI
	secrets fakeObjects[kube.StateSecret]
	leases  fakeObjects[kube.StateLease]
}

// fakeAPI is what the fake's kinds share: one lock, one resourceVersion counter.
type fakeAPI struct {
	mu sync.Mutex
	rv int
}

func newFakeKube() *fakeKube {
	f := &fakeKube{}
	f.secrets = fakeObjects[kube.StateSecret]{api: &f.api, kind: "secret", m: map[string]kube.StateSecret{},
		meta: func(s *kube.StateSecret) (string, *string) { return s.Name, &s.ResourceVersion },
		copy: func(s kube.StateSecret) kube.StateSecret { s.Data = maps.Clone(s.Data); return s }}
	f.leases = fakeObjects[kube.StateLease]{api: &f.api, kind: "lease", m: map[string]kube.StateLease{},
		meta: func(l *kube.StateLease) (string, *string) { return l.Name, &l.ResourceVersion },
		copy: func(l kube.StateLease) kube.StateLease { return l }}
	return f
}

func notFound(kind, name string) error {
	return fmt.Errorf("%s %s: %w", kind, name, kube.ErrObjectNotFound)
}
func conflict(kind, name string) error {
	return fmt.Errorf("%s %s: %w", kind, name, kube.ErrObjectConflict)
}

// fakeObjects are the objects of one kind, by namespace/name.
type fakeObjects[T any] struct {
	api  *fakeAPI // guards m
	kind string
	m    map[string]T
	meta func(*T) (name string, resourceVersion *string)
	copy func(T) T // what a read returns: no map shared with the store
}

func (o *fakeObjects[T]) get(ns, name string) (*T, error) {
	o.api.mu.Lock()
	defer o.api.mu.Unlock()
	x, ok := o.m[ns+"/"+name]
	if !ok {
		return nil, notFound(o.kind, name)
	}
	x = o.copy(x)
	return &x, nil
}

// put creates x (create) or replaces it at its resourceVersion, if set; the stored copy gets
// the next resourceVersion.
func (o *fakeObjects[T]) put(ns string, x *T, create bool) (*T, error) {
	o.api.mu.Lock()
	defer o.api.mu.Unlock()
	name, want := o.meta(x)
	cur, ok := o.m[ns+"/"+name]
	switch {
	case create && ok:
		return nil, conflict(o.kind, name)
	case !create && !ok:
		return nil, notFound(o.kind, name)
	case !create && *want != "":
		if _, have := o.meta(&cur); *want != *have {
			return nil, conflict(o.kind, name)
		}
	}
	c := *x
	_, crv := o.meta(&c)
	o.api.rv++
	*crv = fmt.Sprint(o.api.rv)
	o.m[ns+"/"+name] = c
	return &c, nil
}

func (o *fakeObjects[T]) delete(ns, name, rv string) error {
	o.api.mu.Lock()
	defer o.api.mu.Unlock()
	cur, ok := o.m[ns+"/"+name]
	if !ok {
		return notFound(o.kind, name)
	}
	if _, have := o.meta(&cur); rv != "" && rv != *have {
		return conflict(o.kind, name)
	}
	delete(o.m, ns+"/"+name)
	return nil
}

func (f *fakeKube) StateSecrets(ns string) kube.StateObjects[kube.StateSecret] {
	return fakeIn[kube.StateSecret]{&f.secrets, ns}
}

func (f *fakeKube) StateLeases(ns string) kube.StateObjects[kube.StateLease] {
	return fakeIn[kube.StateLease]{&f.leases, ns}
}

// fakeIn are the objects of one kind in namespace ns.
type fakeIn[T any] struct {
	o  *fakeObjects[T]
	ns string
}

func (f fakeIn[T]) Get(_ context.Context, name string) (*T, error) { return f.o.get(f.ns, name) }
func (f fakeIn[T]) Create(_ context.Context, x *T) (*T, error)     { return f.o.put(f.ns, x, true) }
func (f fakeIn[T]) Update(_ context.Context, x *T) (*T, error)     { return f.o.put(f.ns, x, false) }
func (f fakeIn[T]) Delete(_ context.Context, name, rv string) error {
	return f.o.delete(f.ns, name, rv)
}

func (f *fakeKube) ListStateSecrets(_ context.Context, ns string, match map[string]string) ([]kube.StateSecret, error) {
	f.api.mu.Lock()
	defer f.api.mu.Unlock()
	var out []kube.StateSecret
	for k, s := range f.secrets.m {
		if !strings.HasPrefix(k, ns+"/") {
			continue
		}
		ok := true
		for lk, lv := range match {
			ok = ok && s.Labels[lk] == lv
		}
		if ok {
			out = append(out, s)
		}
	}
	return out, nil
}

func (f *fakeKube) EnsureNamespace(context.Context, string, map[string]string) error { return nil }

func TestKubernetesBackendFake(t *testing.T) {
	statetest.Conformance(t, statetest.KubeOpener(newFakeKube(), "ns"), statetest.Caps{CAS: true, KnowsUnlock: true})
}

func TestKubernetesListFake(t *testing.T) {
	ctx := context.Background()
	k := newFakeKube()
	open := statetest.KubeOpener(k, "ns")
	for _, g := range []string{"b", "a"} {
		if err := open(t, g).Write(ctx, &state.Document{}); err != nil {
			t.Fatal(err)
		}
	}
	groups, err := open(t, "").(state.Lister).List(ctx)
	if err != nil || strings.Join(groups, ",") != "a,b" {
		t.Fatalf("List = %v, %v; want a, b", groups, err)
	}
}

func TestKubernetesTakeoverFake(t *testing.T) {
	k := newFakeKube()
	lease := time.Second
	statetest.Takeover(t, func(t testing.TB, group string, notify func(state.Notice)) state.Backend {
		return statetest.KubeOpener(k, "ns", state.WithLeaseDuration(lease), state.WithNotify(notify))(t, group)
	}, lease)
}

// TestKubernetesLockLostFake: a holder whose lease was taken over learns it at the next renewal
// and its writes are refused.
func TestKubernetesLockLostFake(t *testing.T) {
	ctx := context.Background()
	k := newFakeKube()
	var mu sync.Mutex
	var notices []state.Notice
	b := statetest.KubeOpener(k, "ns", state.WithLeaseDuration(time.Second), state.WithNotify(func(n state.Notice) {
		mu.Lock()
		notices = append(notices, n)
		mu.Unlock()
	}))(t, "lost")
	if _, err := b.Lock(ctx, state.NewInfo("apply")); err != nil {
		t.Fatal(err)
	}
	// Another run takes the lease by force (as if ours had expired while we were paused).
	l, _ := k.StateLeases("ns").Get(ctx, "slipway-lock-lost")
	l.Holder = "someone-else"
	l.Annotations = nil
	if _, err := k.StateLeases("ns").Update(ctx, l); err != nil {
		t.Fatal(err)
	}
	devtest.WaitFor(t, 3*time.Second, "a lock-lost notice", func() (bool, string) {
		mu.Lock()
		defer mu.Unlock()
		return len(notices) > 0, "no notice"
	})
	if notices[0].Kind != state.NoticeLockLost {
		t.Fatalf("notice = %+v; want lock-lost", notices[0])
	}
	if err := b.Write(ctx, &state.Document{}); !errors.Is(err, state.ErrLockLost) {
		t.Fatalf("Write after losing the lock = %v; want ErrLockLost", err)
	}
}
