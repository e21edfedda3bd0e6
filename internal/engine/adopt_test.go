package engine

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"slipway.dev/slipway/internal/image"
	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/spec"
	"slipway.dev/slipway/internal/state"
)

// stopsAfter is the fake cluster killed after n relabels: the next one fails, as a run killed
// there leaves the rest undone.
type stopsAfter struct {
	*fakeCluster
	n int
}

var errKilled = errors.New("killed")

func (s *stopsAfter) Relabel(ctx context.Context, k plan.Key, uid, label, from, to string) error {
	if s.n == 0 {
		return errKilled
	}
	s.n--
	return s.fakeCluster.Relabel(ctx, k, uid, label, from, to)
}

// legacyFixture is target front of group scale as the release before deployment keys left
// it: the state scale-front.json (file backends in a temporary directory, the real ones), the
// namespace scale-front and a Service and claim per node labelled scale-front.
type legacyFixture struct {
	g           *spec.Group
	f           *fakeCluster
	store, old  state.Backend
	jobs        []image.Job
	ns, oldKey  string
	oldLineage  string
	machineIDs  map[string]string
	objectCount int
}

func newLegacyFixture(t *testing.T, oldDoc func(d *state.Document)) *legacyFixture {
	t.Helper()
	ctx := context.Background()
	whole := benchGroup(t, 2)
	for _, n := range whole.Nodes {
		n.App = "front"
	}
	g, err := whole.ForTarget("front")
	if err != nil {
		t.Fatal(err)
	}
	x := &legacyFixture{g: g, f: newFakeCluster(), ns: "scale-front", oldKey: "scale-front", machineIDs: map[string]string{}}
	dir := t.TempDir()
	if x.store, err = state.Open(ctx, "file://"+filepath.Join(dir, g.Name+".json"), g.Name, nil); err != nil {
		t.Fatal(err)
	}
	if x.old, err = state.Open(ctx, "file://"+filepath.Join(dir, x.oldKey+".json"), x.oldKey, nil); err != nil {
		t.Fatal(err)
	}
	doc := &state.Document{Group: x.oldKey, Namespace: x.ns, Nodes: map[string]*state.NodeState{}}
	x.f.Objects[plan.Key{Kind: "Namespace", Name: x.ns}] = labelled("v1", "Namespace", "", x.ns, x.oldKey)
	for _, n := range g.Nodes {
		x.machineIDs[n.Name] = strings.Repeat("a", 31) + n.Name[len(n.Name)-1:]
		doc.Nodes[n.Name] = &state.NodeState{MachineID: x.machineIDs[n.Name]}
		x.f.Objects[plan.Key{Kind: "Service", Namespace: x.ns, Name: n.Name}] = labelled("v1", "Service", x.ns, n.Name, x.oldKey)
		x.f.Objects[plan.Key{Kind: "PersistentVolumeClaim", Namespace: x.ns, Name: n.Name + "-state"}] = labelled("v1", "PersistentVolumeClaim", x.ns, n.Name+"-state", x.oldKey)
		x.jobs = append(x.jobs, image.Job{Name: n.Name, Repository: "reg/" + x.ns + "/" + n.Name, Source: image.Source{Rootfs: "one"}})
		x.objectCount += 2
	}
	if oldDoc != nil {
		oldDoc(doc)
	}
	if err := x.old.Write(ctx, doc); err != nil {
		t.Fatal(err)
	}
	x.oldLineage = doc.Lineage
	return x
}

func labelled(apiVersion, kind, ns, name, group string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	u.SetNamespace(ns)
	u.SetName(name)
	u.SetUID(types.UID("uid-" + kind + "-" + name))
	u.SetLabels(map[string]string{spec.LabelGroup: group, spec.LabelManagedBy: spec.ManagedBy, spec.LabelName: name})
	return u
}

func (x *legacyFixture) engine(k Cluster) *Engine {
	return New(Options{Kube: k, Builder: &fakeBuilder{imgs: map[string]v1.Image{}}, Publisher: &fakeRegistry{tags: map[string]v1.Hash{}}, Parallelism: 10})
}

func (x *legacyFixture) target() Target {
	return Target{Group: x.g, Namespace: x.ns, Jobs: x.jobs, Store: x.store, Legacy: x.old}
}

// labels returns the slipway.dev/group label of every object of the fake, by kind and name.
func (x *legacyFixture) labels() map[string]string {
	x.f.Mu.Lock()
	defer x.f.Mu.Unlock()
	out := map[string]string{}
	for k, u := range x.f.Objects {
		out[k.Kind+" "+k.Name] = u.GetLabels()[spec.LabelGroup]
	}
	return out
}

// TestAdoptLegacyTargetState (issue 46, upgrade path): a per-app target's state and objects
// written by the release before deployment keys (key scale-front) are adopted: plan says so,
// reads the old state as the deployment's (its machine IDs kept, no node made anew, nothing
// deleted) and changes nothing; adopt moves the state to scale.front, keeping its lineage and
// nodes, relabels the namespace and every object and deletes the old state; a run killed
// between two relabels is finished by the next. Stand-ins: the fake cluster; the states are
// the real file backend.
func TestAdoptLegacyTargetState(t *testing.T) {
	ctx := context.Background()
	x := newLegacyFixture(t, nil)
	e := x.engine(x.f)
	p, err := e.Plan(ctx, x.target())
	if err != nil {
		t.Fatalf("Plan: %v", err)
	}
	if !slices.ContainsFunc(p.Notes, func(n string) bool {
		return strings.Contains(n, "adopts the state of an earlier release") && strings.Contains(n, "key scale-front, which is now scale.front")
	}) {
		t.Errorf("plan notes %q: want the adoption of scale-front as scale.front", p.Notes)
	}
	for _, np := range p.Nodes {
		if np.Removed {
			t.Errorf("plan removes node %s", np.Node)
		}
		for _, c := range np.Changes {
			if c.Action == plan.Delete || (c.Key.Kind == "PersistentVolumeClaim" && c.Action != plan.Update) || (c.Key.Kind == "Service" && c.Action == plan.Create) {
				t.Errorf("plan change %s %s: an adopted object is neither made anew nor deleted", c.Action, c.Key)
			}
		}
	}
	if diff := cmp.Diff(x.machineIDs, p.MachineIDs); diff != "" {
		t.Errorf("plan machine IDs (-want +got):\n%s", diff)
	}
	// plan -destroy reads it as destroy will: the namespace and every object are the
	// deployment's, so the namespace goes with them.
	pd, err := e.PlanDestroy(ctx, x.target())
	if err != nil {
		t.Fatalf("PlanDestroy: %v", err)
	}
	deletes := 0
	for _, np := range pd.Nodes {
		deletes += len(np.Changes)
	}
	if deletes != x.objectCount+1 || !slices.ContainsFunc(pd.Notes, func(n string) bool { return strings.Contains(n, "adopts") }) {
		t.Errorf("plan -destroy: %d deletions (want %d: the objects and the namespace), notes %q", deletes, x.objectCount+1, pd.Notes)
	}
	if calls := x.f.Calls(); len(calls) != 0 {
		t.Errorf("the plan changed the cluster: %q", calls)
	}
	if d, _ := x.store.Read(ctx); d != nil {
		t.Fatalf("the plan wrote the new state: %+v", d)
	}

	// Killed after the state's copy and one relabel: the next run finishes it.
	if _, err := x.engine(&stopsAfter{fakeCluster: x.f, n: 1}).adopt(ctx, x.target()); !errors.Is(err, errKilled) {
		t.Fatalf("adopt killed after one relabel: %v, want %v", err, errKilled)
	}
	if d, _ := x.old.Read(ctx); d == nil {
		t.Fatal("the old state went before every object was relabelled")
	}
	if p, err := e.Plan(ctx, x.target()); err != nil || !slices.ContainsFunc(p.Notes, func(n string) bool { return strings.Contains(n, "adopts") }) {
		t.Fatalf("plan after a killed adoption: %v, notes %q: want the adoption still said", err, notes(p))
	}
	if _, err := e.adopt(ctx, x.target()); err != nil {
		t.Fatalf("adopt again: %v", err)
	}
	got, err := x.store.Read(ctx)
	if err != nil || got == nil {
		t.Fatalf("new state: %v, %v", got, err)
	}
	if got.Group != "scale.front" || got.Lineage != x.oldLineage || got.Namespace != x.ns || len(got.Nodes) != 2 || got.Nodes["n000"].MachineID != x.machineIDs["n000"] {
		t.Errorf("adopted state: group %s, lineage %s, namespace %s, nodes %d: want scale.front, %s, %s, the old nodes and machine IDs", got.Group, got.Lineage, got.Namespace, len(got.Nodes), x.oldLineage, x.ns)
	}
	if d, err := x.old.Read(ctx); d != nil || err != nil {
		t.Errorf("old state after the adoption: %v, %v; want none", d, err)
	}
	for obj, label := range x.labels() {
		if label != "scale.front" {
			t.Errorf("%s: label %s, want scale.front", obj, label)
		}
	}
	p, err = e.Plan(ctx, x.target())
	if err != nil {
		t.Fatalf("plan after the adoption: %v", err)
	}
	if slices.ContainsFunc(p.Notes, func(n string) bool { return strings.Contains(n, "adopts") }) {
		t.Errorf("plan after the adoption still adopts: %q", p.Notes)
	}
}

// TestAdoptRefusesForeignState: a state under the old key that was not written for the target
// (a group called scale-front: another node, another namespace, or a state of its own already
// under the new key) is never adopted: plan refuses the namespace as before, adopt changes
// nothing.
func TestAdoptRefusesForeignState(t *testing.T) {
	for _, tc := range []struct {
		name string
		old  func(d *state.Document)
		cur  bool // the deployment has a state of its own
	}{
		{name: "a node the target lacks", old: func(d *state.Document) { d.Nodes["db"] = &state.NodeState{MachineID: "x"} }},
		{name: "another namespace", old: func(d *state.Document) { d.Namespace = "elsewhere" }},
		{name: "no nodes", old: func(d *state.Document) { d.Nodes = nil }},
		{name: "a state of its own", cur: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			x := newLegacyFixture(t, tc.old)
			if tc.cur {
				if err := x.store.Write(ctx, &state.Document{Group: x.g.Name, Namespace: x.ns}); err != nil {
					t.Fatal(err)
				}
			}
			e := x.engine(x.f)
			_, err := e.Plan(ctx, x.target())
			var pe *PreflightError
			if !errors.As(err, &pe) || !strings.Contains(err.Error(), "scale-front") {
				t.Errorf("Plan: %v, want the refusal of the namespace of scale-front", err)
			}
			if _, err := e.adopt(ctx, x.target()); err != nil {
				t.Fatalf("adopt: %v", err)
			}
			if d, _ := x.old.Read(ctx); d == nil {
				t.Error("the old state was deleted")
			}
			if calls := x.f.Calls(); len(calls) != 0 {
				t.Errorf("adopt changed the cluster: %q", calls)
			}
		})
	}
}

func notes(p *plan.Plan) []string {
	if p == nil {
		return nil
	}
	return p.Notes
}

// TestAdoptWithoutCluster: render's Adopt with no cluster to relabel in refuses a pending
// adoption, naming the old key, and changes no state; with no state under the old key it is
// no error.
func TestAdoptWithoutCluster(t *testing.T) {
	ctx := context.Background()
	x := newLegacyFixture(t, nil)
	err := New(Options{}).Adopt(ctx, x.target())
	if err == nil || !strings.Contains(err.Error(), "under the key of an earlier release, scale-front") {
		t.Fatalf("Adopt without a cluster: %v, want the refusal naming scale-front", err)
	}
	if d, _ := x.store.Read(ctx); d != nil {
		t.Errorf("Adopt without a cluster wrote the new state: %+v", d)
	}
	if err := x.old.Delete(ctx); err != nil {
		t.Fatal(err)
	}
	if err := New(Options{}).Adopt(ctx, x.target()); err != nil {
		t.Errorf("Adopt with no old state: %v", err)
	}
}
