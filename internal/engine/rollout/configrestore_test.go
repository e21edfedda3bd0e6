package rollout

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"slipway.dev/slipway/internal/engine/enginetest"
	"slipway.dev/slipway/internal/engine/lane"
	"slipway.dev/slipway/internal/event"
	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/spec"
)

// configMap is ConfigMap name of namespace demo holding data, with a field only the server sets.
func configMap(name string, data map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"data": data}}
	u.SetAPIVersion("v1")
	u.SetKind("ConfigMap")
	u.SetName(name)
	u.SetNamespace("demo")
	return u
}

// TestApplyObjectsKeepsConfig: a node's apply-objects step keeps, before it applies them, the
// ConfigMaps it updates as the cluster holds them (what a rollback puts back), not the ones it
// creates, and says whether it changed the node's config; the group's own step keeps nothing.
func TestApplyObjectsKeepsConfig(t *testing.T) {
	app := plan.Key{Kind: "ConfigMap", Namespace: "demo", Name: "web-app"}
	added := plan.Key{Kind: "ConfigMap", Namespace: "demo", Name: "web-new"}
	for _, tc := range []struct {
		name        string
		node        *spec.Node
		changes     []plan.Change
		wantKept    []string // the kept objects' level, in order
		wantChanged bool
	}{
		{name: "an update is kept", node: &spec.Node{Name: "web"}, changes: []plan.Change{{Key: app, Action: plan.Update}},
			wantKept: []string{"info"}, wantChanged: true},
		{name: "a create has nothing to keep", node: &spec.Node{Name: "web"}, changes: []plan.Change{{Key: added, Action: plan.Create}},
			wantChanged: true},
		{name: "the group's own step keeps nothing", changes: []plan.Change{{Key: app, Action: plan.Update}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			f := enginetest.NewCluster()
			if _, err := f.Apply(ctx, configMap("web-app", map[string]any{"level": "info"}), enginetest.ApplyOptions()); err != nil {
				t.Fatal(err)
			}
			f.ResetCalls()
			l := New(lane.Env{Emit: func(event.Event) {}}, Options{Kube: f, Parallelism: 1})
			objs := map[plan.Key]*unstructured.Unstructured{app: configMap("web-app", map[string]any{"level": "debug"}), added: configMap("web-new", nil)}
			changes := map[plan.Key]*plan.Change{}
			var keys []plan.Key
			for _, c := range tc.changes {
				changes[c.Key] = &c
				keys = append(keys, c.Key)
			}
			nr := &lane.NodeRun{Node: tc.node, Object: func(k plan.Key) *unstructured.Unstructured { return objs[k] },
				Change: func(k plan.Key) *plan.Change { return changes[k] }}
			if err := l.applyNodeObjects(ctx, nr, plan.Step{Kind: plan.StepApplyObjects, Objects: keys}); err != nil {
				t.Fatal(err)
			}
			var kept []string
			for _, u := range lane.Get(&nr.Slots, prevConfigKey) {
				level, _, _ := unstructured.NestedString(u.Object, "data", "level")
				kept = append(kept, level)
			}
			if d := cmp.Diff(tc.wantKept, kept); d != "" {
				t.Errorf("kept config (-want +got):\n%s", d)
			}
			if got := lane.Get(&nr.Slots, configChangedKey); got != tc.wantChanged {
				t.Errorf("config changed = %v, want %v", got, tc.wantChanged)
			}
			if got := len(f.Calls()); got != len(keys) {
				t.Errorf("calls %q, want one apply per object", f.Calls())
			}
		})
	}
}

// TestNamingConfig: the template set back names the config its pod reads.
func TestNamingConfig(t *testing.T) {
	dep := lane.RollbackObject(deploymentNaming("sha256:old"))
	for _, tc := range []struct {
		name, hash, want string
	}{
		{"no hash keeps it", "", "sha256:old"},
		{"the same hash", "sha256:old", "sha256:old"},
		{"another hash names it", "sha256:new", "sha256:new"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := namingConfig(dep, tc.hash)
			if h := got.Spec.Template.Annotations[spec.AnnotationConfigHash]; h != tc.want {
				t.Errorf("config hash %q, want %q", h, tc.want)
			}
			if dep.Spec.Template.Annotations[spec.AnnotationConfigHash] != "sha256:old" {
				t.Error("namingConfig changed the template it was given")
			}
		})
	}
}
