package sharedreads

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"slipway.dev/slipway/internal/engine/enginetest"
	"slipway.dev/slipway/internal/engine/lane"
	"slipway.dev/slipway/internal/kube"
	"slipway.dev/slipway/internal/spec"
)

var _ Source = (*enginetest.Lister)(nil) // the stand-in of the API server these tests read

func label(g string) map[string]string { return map[string]string{spec.LabelGroup: g} }

// runCluster is a stand-in cluster of a wave run's namespaces, with the objects a shared read
// must keep apart: someone else's (unlabelled), a group's not in the run, a group's in another
// group's namespace, and a group's whose name another group's name begins with.
func runCluster() *enginetest.Lister {
	c := enginetest.NewLister()
	for _, g := range []string{"a", "b"} {
		c.Put("v1", "Namespace", "", g, label(g))
		c.Put("apps/v1", "Deployment", g, "web", label(g))
		c.Put("v1", "Service", g, "web", label(g))
		c.Put("apps/v1", "ReplicaSet", g, "web-1", label(g))
		c.Put("v1", "Pod", g, "web-1-x", label(g))
	}
	c.Put("v1", "ConfigMap", "a", "theirs", nil)
	c.Put("v1", "Pod", "a", "theirs", nil)
	c.Put("apps/v1", "Deployment", "a", "other", label("other"))
	c.Put("apps/v1", "Deployment", "b", "from-a", label("a"))
	c.Put("v1", "Pod", "b", "from-a", label("a"))
	c.Put("v1", "Namespace", "", "shop", label("shop"))
	c.Put("v1", "Service", "shop", "web", label("shop"))
	c.Put("v1", "Service", "shop", "front", label("shop.front"))
	c.Put("v1", "Namespace", "", "x", nil) // a namespace two groups claim
	c.Put("v1", "Service", "x", "web", label("x1"))
	c.Put("v1", "Namespace", "", "c", label("c")) // a group not in the run
	c.Put("v1", "Service", "c", "web", label("c"))
	c.Put("v1", "Namespace", "", "d", nil) // a namespace slipway did not make
	c.Put("v1", "Service", "d", "web", label("d"))
	return c
}

// runSelector selects the groups runReads covers, x1 and x2 left out (they share x).
const runSelector = `slipway.dev/group in (a,b,d,empty,shop,shop.front)`

// runReads are the shared reads of the run's groups over c, its reads so far forgotten.
func runReads(c *enginetest.Lister) *Reads {
	s := New(c)
	for _, g := range []string{"a", "b", "d", "shop", "empty"} {
		s.Cover(g, g)
	}
	s.Cover("shop.front", "shop-front")
	s.Cover("x1", "x")
	s.Cover("x2", "x")
	c.Reads()
	return s
}

// keys are the keys of objs as kind/namespace/name, sorted.
var keys = enginetest.Keys

func TestListManagedObjects(t *testing.T) {
	shared := map[string]int{`list objects in "" by "` + runSelector + `"`: 1}
	for _, tc := range []struct {
		name, ns, selector string
		stop               bool
		want               []string
		reads              map[string]int
	}{
		{name: "its group's own, from one read across the run", ns: "a", selector: lane.GroupSelector("a"),
			want: []string{"Deployment/a/web", "Service/a/web"}, reads: shared},
		{name: "another group's object in its namespace left out", ns: "b", selector: lane.GroupSelector("b"),
			want: []string{"Deployment/b/web", "Service/b/web"}, reads: shared},
		{name: "a group whose name begins another's", ns: "shop", selector: lane.GroupSelector("shop"),
			want: []string{"Service/shop/web"}, reads: shared},
		{name: "a covered namespace that holds nothing", ns: "empty", selector: lane.GroupSelector("empty"),
			reads: shared},
		{name: "another selector reads the cluster", ns: "a", selector: "",
			want:  []string{"ConfigMap/a/theirs", "Deployment/a/other", "Deployment/a/web", "Service/a/web"},
			reads: map[string]int{`list objects in "a" by ""`: 2}},
		{name: "another group's selector reads the cluster", ns: "b", selector: lane.GroupSelector("a"),
			want: []string{"Deployment/b/from-a"}, reads: map[string]int{`list objects in "b" by "slipway.dev/group=a"`: 2}},
		{name: "a namespace not covered reads the cluster", ns: "c", selector: lane.GroupSelector("c"),
			want: []string{"Service/c/web"}, reads: map[string]int{`list objects in "c" by "slipway.dev/group=c"`: 2}},
		{name: "a namespace two groups cover reads the cluster", ns: "x", selector: lane.GroupSelector("x1"),
			want: []string{"Service/x/web"}, reads: map[string]int{`list objects in "x" by "slipway.dev/group=x1"`: 2}},
		{name: "after Stop, the cluster", ns: "a", selector: lane.GroupSelector("a"), stop: true,
			want: []string{"Deployment/a/web", "Service/a/web"}, reads: map[string]int{`list objects in "a" by "slipway.dev/group=a"`: 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := runCluster()
			s := runReads(c)
			if tc.stop {
				s.Stop()
			}
			for range 2 { // two reads: the cluster is read once when shared
				got, err := s.ListManagedObjects(context.Background(), tc.ns, tc.selector)
				if err != nil {
					t.Fatal(err)
				}
				if d := cmp.Diff(tc.want, keys(got)); d != "" {
					t.Errorf("objects (-want +got):\n%s", d)
				}
			}
			if d := cmp.Diff(tc.reads, c.Reads()); d != "" {
				t.Errorf("reads (-want +got):\n%s", d)
			}
		})
	}
}

// TestLabelled: a plan's read of its whole namespace gets every run group's objects there
// (and completes them itself when it needs another's); false when the namespace's reads are
// not shared.
func TestLabelled(t *testing.T) {
	for _, tc := range []struct {
		name, ns string
		stop     bool
		want     []string
		ok       bool
	}{
		{name: "the run's groups' objects", ns: "a", want: []string{"Deployment/a/web", "Service/a/web"}, ok: true},
		{name: "another run group's object in the namespace", ns: "b", ok: true,
			want: []string{"Deployment/b/from-a", "Deployment/b/web", "Service/b/web"}},
		{name: "both groups' of a shared name", ns: "shop", want: []string{"Service/shop/front", "Service/shop/web"}, ok: true},
		{name: "a covered namespace that holds nothing", ns: "empty", ok: true},
		{name: "a namespace not covered", ns: "c"},
		{name: "a namespace two groups cover", ns: "x"},
		{name: "after Stop", ns: "a", stop: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := runCluster()
			s := runReads(c)
			if tc.stop {
				s.Stop()
			}
			got, ok := s.Labelled(context.Background(), tc.ns)
			if d := cmp.Diff(tc.want, keys(got)); d != "" || ok != tc.ok {
				t.Errorf("labelled: %v (-want +got):\n%s", ok, d)
			}
			want := map[string]int{}
			if tc.ok {
				want[`list objects in "" by "`+runSelector+`"`] = 1
			}
			if d := cmp.Diff(want, c.Reads()); d != "" {
				t.Errorf("reads (-want +got):\n%s", d)
			}
		})
	}
}

// TestCallersOwnTheirCopies: what one read returns is the caller's to change; the next read
// of the shared result is as the cluster holds it.
func TestCallersOwnTheirCopies(t *testing.T) {
	ctx := context.Background()
	s := runReads(runCluster())
	objs, _ := s.ListManagedObjects(ctx, "a", lane.GroupSelector("a"))
	clear(objs)
	labelled, _ := s.Labelled(ctx, "a")
	clear(labelled)
	for _, name := range []string{"a", "d"} { // from the list; read once as the list lacks it
		ns, err := s.Namespace(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		ns.SetAnnotations(map[string]string{"changed": "by a caller"})
	}
	objs, _ = s.ListManagedObjects(ctx, "a", lane.GroupSelector("a"))
	labelled, _ = s.Labelled(ctx, "a")
	if d := cmp.Diff([]string{"Deployment/a/web", "Service/a/web"}, keys(objs)); d != "" {
		t.Errorf("objects after a caller cleared its own (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"Deployment/a/web", "Service/a/web"}, keys(labelled)); d != "" {
		t.Errorf("labelled after a caller cleared its own (-want +got):\n%s", d)
	}
	for _, name := range []string{"a", "d"} {
		if ns, _ := s.Namespace(ctx, name); ns.GetAnnotations() != nil {
			t.Errorf("namespace %s after a caller changed its copy: annotations %v", name, ns.GetAnnotations())
		}
	}
}

// workloadNames are the workloads as kind/namespace/name, sorted.
func workloadNames(wl *kube.Workloads) []string {
	var out []string
	for _, d := range wl.Deployments {
		out = append(out, "Deployment/"+d.Namespace+"/"+d.Name)
	}
	for _, rs := range wl.ReplicaSets {
		out = append(out, "ReplicaSet/"+rs.Namespace+"/"+rs.Name)
	}
	for _, p := range wl.Pods {
		out = append(out, "Pod/"+p.Namespace+"/"+p.Name)
	}
	slices.Sort(out)
	return out
}

func TestListWorkloads(t *testing.T) {
	shared := map[string]int{`list workloads in "" by "` + runSelector + `"`: 1}
	for _, tc := range []struct {
		name, ns, selector string
		stop               bool
		want               []string
		reads              map[string]int
	}{
		{name: "its group's own of each kind", ns: "a", selector: lane.GroupSelector("a"), reads: shared,
			want: []string{"Deployment/a/web", "Pod/a/web-1-x", "ReplicaSet/a/web-1"}},
		{name: "another group's in its namespace left out", ns: "b", selector: lane.GroupSelector("b"), reads: shared,
			want: []string{"Deployment/b/web", "Pod/b/web-1-x", "ReplicaSet/b/web-1"}},
		{name: "a covered namespace that holds none", ns: "empty", selector: lane.GroupSelector("empty"), reads: shared},
		{name: "another group's selector reads the cluster", ns: "b", selector: lane.GroupSelector("a"),
			want:  []string{"Deployment/b/from-a", "Pod/b/from-a"},
			reads: map[string]int{`list workloads in "b" by "slipway.dev/group=a"`: 2}},
		{name: "a namespace not covered reads the cluster", ns: "c", selector: lane.GroupSelector("c"),
			reads: map[string]int{`list workloads in "c" by "slipway.dev/group=c"`: 2}},
		{name: "after Stop, the cluster", ns: "a", selector: lane.GroupSelector("a"), stop: true,
			want:  []string{"Deployment/a/web", "Pod/a/web-1-x", "ReplicaSet/a/web-1"},
			reads: map[string]int{`list workloads in "a" by "slipway.dev/group=a"`: 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := runCluster()
			s := runReads(c)
			if tc.stop {
				s.Stop()
			}
			for range 2 {
				got, err := s.ListWorkloads(context.Background(), tc.ns, tc.selector)
				if err != nil {
					t.Fatal(err)
				}
				if d := cmp.Diff(tc.want, workloadNames(got)); d != "" {
					t.Errorf("workloads (-want +got):\n%s", d)
				}
			}
			if d := cmp.Diff(tc.reads, c.Reads()); d != "" {
				t.Errorf("reads (-want +got):\n%s", d)
			}
		})
	}
}

func TestNamespace(t *testing.T) {
	list := `list namespaces by "` + runSelector + `"`
	for _, tc := range []struct {
		name, ns string
		stop     bool
		want     bool // the namespace is there
		reads    map[string]int
	}{
		{name: "one the run's groups label, from one list", ns: "a", want: true, reads: map[string]int{list: 1}},
		{name: "one slipway did not make, read once for every caller", ns: "d", want: true,
			reads: map[string]int{list: 1, "get namespace d": 1}},
		{name: "one not there, read once", ns: "empty", reads: map[string]int{list: 1, "get namespace empty": 1}},
		{name: "a namespace not covered reads the cluster", ns: "c", want: true, reads: map[string]int{"get namespace c": 2}},
		{name: "a namespace two groups cover reads the cluster", ns: "x", want: true, reads: map[string]int{"get namespace x": 2}},
		{name: "after Stop, the cluster", ns: "a", stop: true, want: true, reads: map[string]int{"get namespace a": 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := runCluster()
			s := runReads(c)
			if tc.stop {
				s.Stop()
			}
			for range 2 {
				got, err := s.Namespace(context.Background(), tc.ns)
				if err != nil {
					t.Fatal(err)
				}
				if (got != nil) != tc.want || got != nil && got.GetName() != tc.ns {
					t.Errorf("namespace %s: got %v, want it there: %v", tc.ns, got, tc.want)
				}
			}
			if d := cmp.Diff(tc.reads, c.Reads()); d != "" {
				t.Errorf("reads (-want +got):\n%s", d)
			}
		})
	}
}

var errForbidden = errors.New(`stand-in API server: forbidden: cannot list at the cluster scope`)

// failing fails the reads across namespaces (""), as an API server does for a user allowed
// only the run's namespaces, and every read when all.
func failing(all bool) func(context.Context, string) error {
	return func(_ context.Context, read string) error {
		if all || read == `list objects in "" by "`+runSelector+`"` || read == `list workloads in "" by "`+runSelector+`"` ||
			read == `list namespaces by "`+runSelector+`"` {
			return errForbidden
		}
		return nil
	}
}
