package sharedreads

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"slipway.dev/slipway/internal/engine/enginetest"
	"slipway.dev/slipway/internal/engine/lane"
)

// TestSharedReadForbidden: a shared read the cluster refuses (say a user allowed only the
// run's namespaces) is tried once; every read of a covered namespace then reads the cluster as
// it would without sharing, and gets what that gets.
func TestSharedReadForbidden(t *testing.T) {
	ctx := context.Background()
	c := runCluster()
	s := runReads(c)
	c.Before = failing(false)
	for range 2 {
		objs, err := s.ListManagedObjects(ctx, "b", lane.GroupSelector("b"))
		if d := cmp.Diff([]string{"Deployment/b/web", "Service/b/web"}, keys(objs)); d != "" || err != nil {
			t.Errorf("objects of b: %v (-want +got):\n%s", err, d)
		}
		wl, err := s.ListWorkloads(ctx, "b", lane.GroupSelector("b"))
		if d := cmp.Diff([]string{"Deployment/b/web", "Pod/b/web-1-x", "ReplicaSet/b/web-1"}, workloadNames(wl)); d != "" || err != nil {
			t.Errorf("workloads of b: %v (-want +got):\n%s", err, d)
		}
		if ns, err := s.Namespace(ctx, "b"); ns == nil || err != nil {
			t.Errorf("namespace b: %v, %v", ns, err)
		}
		if _, ok := s.Labelled(ctx, "b"); ok {
			t.Error("labelled answered from a shared read that failed")
		}
	}
	want := map[string]int{
		`list objects in "" by "` + runSelector + `"`:    1,
		`list workloads in "" by "` + runSelector + `"`:  1,
		`list namespaces by "` + runSelector + `"`:       1,
		`list objects in "b" by "slipway.dev/group=b"`:   2,
		`list workloads in "b" by "slipway.dev/group=b"`: 2,
		"get namespace b": 1, // once for every caller, as one the list lacks
	}
	if d := cmp.Diff(want, c.Reads()); d != "" {
		t.Errorf("reads (-want +got):\n%s", d)
	}
}

// TestErrorsReachTheCaller: when the cluster refuses the read of a namespace too, the caller
// gets the cluster's error, shared or not.
func TestErrorsReachTheCaller(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		read func(s *Reads) error
	}{
		{"objects of a covered namespace", func(s *Reads) error {
			_, err := s.ListManagedObjects(ctx, "a", lane.GroupSelector("a"))
			return err
		}},
		{"objects of a namespace not covered", func(s *Reads) error {
			_, err := s.ListManagedObjects(ctx, "c", lane.GroupSelector("c"))
			return err
		}},
		{"workloads of a covered namespace", func(s *Reads) error {
			_, err := s.ListWorkloads(ctx, "a", lane.GroupSelector("a"))
			return err
		}},
		{"workloads of a namespace not covered", func(s *Reads) error {
			_, err := s.ListWorkloads(ctx, "c", lane.GroupSelector("c"))
			return err
		}},
		{"a covered namespace", func(s *Reads) error {
			_, err := s.Namespace(ctx, "a")
			return err
		}},
		{"a namespace not covered", func(s *Reads) error {
			_, err := s.Namespace(ctx, "c")
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := runCluster()
			s := runReads(c)
			c.Before = failing(true)
			for range 2 { // a failed shared read is no answer for the next caller either
				if err := tc.read(s); !errors.Is(err, errForbidden) {
					t.Errorf("error: %v, want the cluster's: %v", err, errForbidden)
				}
			}
		})
	}
}

// TestCover: what a run shares is fixed at its first shared read; a namespace two groups claim
// is never shared (the run refuses it), and neither group is in the shared selector for it.
func TestCover(t *testing.T) {
	for _, tc := range []struct {
		name  string
		steps func(s *Reads, read func(ns string))
		reads map[string]int
	}{
		{"covered after the first shared read: read as it is", func(s *Reads, read func(string)) {
			s.Cover("a", "a")
			read("a")
			s.Cover("b", "b")
			read("b")
		}, map[string]int{`list objects in "" by "slipway.dev/group in (a)"`: 1, `list objects in "b" by "slipway.dev/group=b"`: 1}},
		{"a read of a namespace not covered fixes nothing", func(s *Reads, read func(string)) {
			s.Cover("a", "a")
			read("c")
			s.Cover("b", "b")
			read("b")
		}, map[string]int{`list objects in "c" by "slipway.dev/group=c"`: 1, `list objects in "" by "slipway.dev/group in (a,b)"`: 1}},
		{"two groups in one namespace, the one covering it again too", func(s *Reads, read func(string)) {
			s.Cover("a", "a")
			s.Cover("x1", "x")
			s.Cover("x2", "x")
			s.Cover("x1", "x")
			read("x")
			read("a")
		}, map[string]int{`list objects in "x" by "slipway.dev/group=x1"`: 1, `list objects in "" by "slipway.dev/group in (a)"`: 1}},
		{"a group covering its namespace twice", func(s *Reads, read func(string)) {
			s.Cover("a", "a")
			s.Cover("a", "a")
			read("a")
		}, map[string]int{`list objects in "" by "slipway.dev/group in (a)"`: 1}},
		{"a group in two namespaces named once", func(s *Reads, read func(string)) {
			s.Cover("a", "a")
			s.Cover("a", "b")
			read("a")
		}, map[string]int{`list objects in "" by "slipway.dev/group in (a)"`: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := runCluster()
			s := New(c)
			tc.steps(s, func(ns string) {
				g := ns
				if ns == "x" {
					g = "x1" // one of the two groups that claim it
				}
				if _, err := s.ListManagedObjects(context.Background(), ns, lane.GroupSelector(g)); err != nil {
					t.Fatal(err)
				}
			})
			if d := cmp.Diff(tc.reads, c.Reads()); d != "" {
				t.Errorf("reads (-want +got):\n%s", d)
			}
		})
	}
}

// held holds the run's shared read of objects until release is closed, and records the
// context it ran with and that context's error when released; started is closed when it
// starts.
type held struct {
	started, release chan struct{}
	once             sync.Once
	ctx              context.Context
	err              error
}

func hold(c *enginetest.Lister) *held {
	h := &held{started: make(chan struct{}), release: make(chan struct{})}
	c.Before = func(ctx context.Context, read string) error {
		if !strings.HasPrefix(read, `list objects in "" `) {
			return ctx.Err() // as the API server's client: a cancelled caller reads nothing
		}
		h.once.Do(func() { h.ctx = ctx; close(h.started) })
		<-h.release
		h.err = ctx.Err()
		return h.err
	}
	return h
}

// TestOneReadForEveryCaller: the engines of a run that read at once wait on one read.
func TestOneReadForEveryCaller(t *testing.T) {
	c := runCluster()
	s := runReads(c)
	h := hold(c)
	var wg sync.WaitGroup
	got := make([][]string, 8)
	for i := range got {
		ns := []string{"a", "b"}[i%2]
		wg.Go(func() {
			objs, err := s.ListManagedObjects(context.Background(), ns, lane.GroupSelector(ns))
			if err != nil {
				t.Error(err)
			}
			got[i] = keys(objs)
		})
	}
	<-h.started
	close(h.release)
	wg.Wait()
	for i, objs := range got {
		ns := []string{"a", "b"}[i%2]
		if d := cmp.Diff([]string{"Deployment/" + ns + "/web", "Service/" + ns + "/web"}, objs); d != "" {
			t.Errorf("reader %d of %s (-want +got):\n%s", i, ns, d)
		}
	}
	if d := cmp.Diff(map[string]int{`list objects in "" by "` + runSelector + `"`: 1}, c.Reads()); d != "" {
		t.Errorf("reads (-want +got):\n%s", d)
	}
}

// TestCallerGivingUp: an engine that gives up while the shared read runs (its group's
// preflight failed) gets its context's error; the read goes on, bounded by sharedReadLimit,
// for the others.
func TestCallerGivingUp(t *testing.T) {
	c := runCluster()
	s := runReads(c)
	h := hold(c)
	first, cancel := context.WithCancel(context.Background())
	gaveUp := make(chan error)
	go func() {
		_, err := s.ListManagedObjects(first, "a", lane.GroupSelector("a"))
		gaveUp <- err
	}()
	<-h.started
	cancel()
	if err := <-gaveUp; !errors.Is(err, context.Canceled) {
		t.Errorf("the caller that gave up: %v, want its context's error", err)
	}
	if _, ok := s.Labelled(first, "a"); ok {
		t.Error("labelled answered a caller that gave up")
	}
	close(h.release)
	objs, err := s.ListManagedObjects(context.Background(), "b", lane.GroupSelector("b"))
	if d := cmp.Diff([]string{"Deployment/b/web", "Service/b/web"}, keys(objs)); d != "" || err != nil {
		t.Errorf("another caller after the first gave up: %v (-want +got):\n%s", err, d)
	}
	if err := h.err; err != nil {
		t.Errorf("the shared read's context: %v, want it apart from the first caller's", err)
	}
	if dl, ok := h.ctx.Deadline(); !ok || time.Until(dl) > sharedReadLimit || time.Until(dl) < sharedReadLimit-time.Minute {
		t.Errorf("the shared read's deadline: %v (%v), want one within %v", dl, ok, sharedReadLimit)
	}
	want := map[string]int{`list objects in "" by "` + runSelector + `"`: 1, `list objects in "a" by "slipway.dev/group=a"`: 1}
	if d := cmp.Diff(want, c.Reads()); d != "" {
		t.Errorf("reads (-want +got):\n%s", d)
	}
}

// TestLazyGivesUpWithContext: a caller of a held read that gives up gets an error that names
// the shared read and wraps its context's.
func TestLazyGivesUpWithContext(t *testing.T) {
	var l lazy[int]
	release := make(chan struct{})
	defer close(release)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := l.get(ctx, func(context.Context) (int, error) { <-release; return 1, nil })
	if !errors.Is(err, context.Canceled) || !strings.HasPrefix(err.Error(), "shared read: ") {
		t.Errorf("error: %v, want the shared read's, wrapping context.Canceled", err)
	}
}
