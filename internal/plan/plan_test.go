package plan

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

func obj(t *testing.T, y string) *unstructured.Unstructured {
	t.Helper()
	var m map[string]any
	if err := yaml.Unmarshal([]byte(y), &m); err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: m}
}

func TestSubset(t *testing.T) {
	for _, tc := range []struct {
		name       string
		want, have string
		subset     bool
	}{
		{"equal", "a: 1\nb: x", "a: 1\nb: x", true},
		{"defaults added", "spec: {replicas: 1}", "spec: {replicas: 1, revisionHistoryLimit: 10}", true},
		{"value differs", "spec: {replicas: 1}", "spec: {replicas: 0}", false},
		{"field missing", "spec: {replicas: 1}", "spec: {}", false},
		{"empty wanted map absent", "spec: {selector: {}}", "spec: {}", true},
		{"false is a value", "spec: {hostUsers: false}", "spec: {}", false},
		{"list element defaults", "ports: [{port: 80}]", "ports: [{port: 80, targetPort: 80, protocol: TCP}]", true},
		{"list longer", "ports: [{port: 80}]", "ports: [{port: 80}, {port: 81}]", false},
		{"list order", "args: [a, b]", "args: [b, a]", false},
		{"null creationTimestamp", "metadata: {creationTimestamp: null, name: x}", "metadata: {name: x, creationTimestamp: '2026-01-01T00:00:00Z'}", true},
		{"int and float", "a: 1", "a: 1.0", true},
		{"number and its string", "a: 1", "a: '1'", true},
		{"bool", "a: true", "a: true", true},
		{"bool differs", "a: true", "a: false", false},
		{"string differs", "a: x", "a: y", false},
		{"int differs", "a: 80", "a: 81", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Subset(obj(t, tc.want).Object, obj(t, tc.have).Object); got != tc.subset {
				t.Errorf("Subset(%s, %s) = %v, want %v", tc.want, tc.have, got, tc.subset)
			}
		})
	}
}

func TestDiff(t *testing.T) {
	live := obj(t, `
kind: Deployment
metadata: {name: web, resourceVersion: "7", generation: 2, managedFields: [{manager: x}]}
spec:
  replicas: 1
  template:
    spec:
      containers: [{name: node, image: r/web@sha256:a, env: [{name: A, value: "1"}]}]
status: {readyReplicas: 1}
`)
	after := obj(t, `
kind: Deployment
metadata: {name: web, resourceVersion: "8", generation: 3}
spec:
  replicas: 1
  template:
    spec:
      containers: [{name: node, image: r/web@sha256:b}]
`)
	want := []FieldDiff{
		{Path: "spec.template.spec.containers[0].env[0].name", Old: "A"},
		{Path: "spec.template.spec.containers[0].env[0].value", Old: "1"},
		{Path: "spec.template.spec.containers[0].image", Old: "r/web@sha256:a", New: "r/web@sha256:b"},
	}
	if d := cmp.Diff(want, Diff(live, after)); d != "" {
		t.Errorf("Diff (-want +got):\n%s", d)
	}
}

func TestCompute(t *testing.T) {
	ns := obj(t, "apiVersion: v1\nkind: Namespace\nmetadata: {name: demo, labels: {slipway.dev/group: demo}}")
	deny := obj(t, "apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata: {name: default-deny, namespace: demo}")
	webDep := obj(t, "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: demo, labels: {slipway.dev/node: web}}\nspec: {replicas: 1}")
	webDepLive := obj(t, "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: demo, resourceVersion: '5', labels: {slipway.dev/node: web}}\nspec: {replicas: 1, revisionHistoryLimit: 10}")
	dbDep := obj(t, "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: db, namespace: demo, labels: {slipway.dev/node: db}}\nspec: {replicas: 1}")
	dbLive := obj(t, "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: db, namespace: demo, resourceVersion: '6', labels: {slipway.dev/node: db}}\nspec: {replicas: 0}")
	oldClaim := obj(t, "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: old-state, namespace: demo, resourceVersion: '9', labels: {slipway.dev/node: old}}")
	key := func(kind, name string) Key { return Key{Kind: kind, Namespace: "demo", Name: name} }

	t.Run("first apply creates everything", func(t *testing.T) {
		p := Compute(Input{Group: "demo", Namespace: "demo", Desired: []*unstructured.Unstructured{ns, deny, webDep},
			Images: []Image{{Name: "web", Node: "web", Push: true}}})
		want := Counts{Push: 1, Create: 3}
		if d := cmp.Diff(want, p.Counts()); d != "" {
			t.Errorf("counts (-want +got):\n%s", d)
		}
		if !p.HasChanges() {
			t.Error("HasChanges = false")
		}
	})
	t.Run("unchanged, updated, removed node", func(t *testing.T) {
		p := Compute(Input{
			Group: "demo", Namespace: "demo",
			Desired: []*unstructured.Unstructured{ns, deny, webDep, dbDep},
			Live: map[Key]*unstructured.Unstructured{
				{Kind: "Namespace", Name: "demo"}:         ns,
				key("NetworkPolicy", "default-deny"):      deny,
				key("Deployment", "web"):                  webDepLive,
				key("Deployment", "db"):                   dbLive,
				key("PersistentVolumeClaim", "old-state"): oldClaim,
			},
			DryRun: map[Key]*unstructured.Unstructured{key("Deployment", "db"): dbDep},
		})
		want := []NodePlan{
			{Node: "db", Changes: []Change{{Key: key("Deployment", "db"), Action: Update, ResourceVersion: "6",
				Diff: []FieldDiff{{Path: "spec.replicas", Old: "0", New: "1"}}}}},
			{Node: "old", Removed: true, Changes: []Change{{Key: key("PersistentVolumeClaim", "old-state"), Action: Delete,
				Destructive: true, Reason: "the node's state on /var/lib is lost", ResourceVersion: "9"}}},
		}
		// The group's and web's plans are empty and present; compare the changing ones.
		var got []NodePlan
		for _, np := range p.Nodes {
			if len(np.Changes) > 0 {
				got = append(got, np)
			}
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("nodes (-want +got):\n%s", d)
		}
	})
	t.Run("immutable field is a replace", func(t *testing.T) {
		claim := obj(t, "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: web-state, namespace: demo, labels: {slipway.dev/node: web}}\nspec: {storageClassName: fast}")
		live := obj(t, "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: web-state, namespace: demo, resourceVersion: '3', labels: {slipway.dev/node: web}}\nspec: {storageClassName: slow}")
		p := Compute(Input{Group: "demo", Namespace: "demo", Desired: []*unstructured.Unstructured{claim},
			Live:      map[Key]*unstructured.Unstructured{key("PersistentVolumeClaim", "web-state"): live},
			Immutable: map[Key]string{key("PersistentVolumeClaim", "web-state"): "spec is immutable"}})
		c := p.Change(key("PersistentVolumeClaim", "web-state"))
		if c == nil || c.Action != Replace || !c.Destructive {
			t.Fatalf("change = %+v, want a destructive replace", c)
		}
	})
	t.Run("drift and pending rollout", func(t *testing.T) {
		p := Compute(Input{Group: "demo", Namespace: "demo",
			StateImages:   map[string]string{"web": "r/web@sha256:b", "db": "r/db@sha256:c"},
			RunningImages: map[string]string{"web": "r/web@sha256:a", "db": "r/db@sha256:c"},
			RolledBack:    map[string]string{"web": "CrashLoopBackOff: pod web-1"},
		})
		want := []Drift{{Node: "web", Running: "r/web@sha256:a", State: "r/web@sha256:b",
			Note: "the last rollout was rolled back (CrashLoopBackOff: pod web-1): apply tries it again"}}
		if d := cmp.Diff(want, p.Drift); d != "" {
			t.Errorf("drift (-want +got):\n%s", d)
		}
	})
	t.Run("rolled-back change reverted in the file is no drift", func(t *testing.T) {
		p := Compute(Input{Group: "demo", Namespace: "demo",
			Images:        []Image{{Name: "web", Node: "web", Digest: "r/web@sha256:a"}},
			StateImages:   map[string]string{"web": "r/web@sha256:b"},
			RunningImages: map[string]string{"web": "r/web@sha256:a"},
			RolledBack:    map[string]string{"web": "CrashLoopBackOff: pod web-1"},
		})
		if len(p.Drift) != 0 {
			t.Errorf("drift = %+v, want none: the file wants what runs", p.Drift)
		}
	})
}

func TestWriteRead(t *testing.T) {
	p := Compute(Input{Group: "demo", Namespace: "demo", StateSerial: 4,
		Desired: []*unstructured.Unstructured{obj(t, "apiVersion: v1\nkind: Namespace\nmetadata: {name: demo}")}})
	path := t.TempDir() + "/plan.json"
	if err := p.Write(path); err != nil {
		t.Fatal(err)
	}
	got, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(p.Totals(), got.Totals()); d != "" || got.StateSerial != 4 || len(got.Desired) != 1 {
		t.Errorf("read back: serial %d, %d objects, counts diff %s", got.StateSerial, len(got.Desired), d)
	}
	if _, err := Read(t.TempDir() + "/missing.json"); err == nil {
		t.Error("Read of a missing file: no error")
	}
}
