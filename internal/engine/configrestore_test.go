package engine

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"slipway.dev/slipway/internal/event"
	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/spec"
)

// configObject is a ConfigMap or Secret of node web in namespace demo holding data.
func configObject(kind, name string, data map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"data": data}}
	u.SetAPIVersion("v1")
	u.SetKind(kind)
	u.SetNamespace("demo")
	u.SetName(name)
	u.SetLabels(map[string]string{"slipway.dev/node": "web"})
	return u
}

// TestRollbackPutsConfigBack (issue 35 item 4): a rollout that fails after the node's
// ConfigMap and Secret were updated in place is set back with that config as it was, before
// the template: the pod set back starts on what it read before, so that a file reverted
// afterwards changes nothing and plan's `No changes.` is true. A rollout that runs ready
// keeps the new config.
func TestRollbackPutsConfigBack(t *testing.T) {
	good := map[string]any{"level": "info"}
	bad := map[string]any{"level": "no-such-level"}
	oldToken := map[string]any{"token": "b2xk"}
	newToken := map[string]any{"token": "bmV3"}
	for _, tc := range []struct {
		name                string
		image               string
		wantConfig, wantKey map[string]any
		wantEvent           string
	}{
		{name: "failed: put back", image: imgCrash, wantConfig: good, wantKey: oldToken,
			wantEvent: "put back ConfigMap web-app, Secret web-keys as the template set back read them"},
		{name: "ready: kept", image: imgB, wantConfig: bad, wantKey: newToken},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newApplyRun(t, imgA)
			ctx := context.Background()
			for _, u := range []*unstructured.Unstructured{configObject("ConfigMap", "web-app", good), configObject("Secret", "web-keys", oldToken)} {
				if _, err := r.f.Apply(ctx, u, applyOptions()); err != nil {
					t.Fatal(err)
				}
			}
			update := func(kind, name string) plan.Change {
				return plan.Change{Key: plan.Key{Kind: kind, Namespace: "demo", Name: name}, Action: plan.Update, Diff: []plan.FieldDiff{{Path: "data"}}}
			}
			p := &plan.Plan{Group: "demo", Namespace: "demo", StateSerial: r.store.Doc.Serial,
				MachineIDs: map[string]string{"web": "id"},
				Images:     []plan.Image{{Name: "web", Node: "web", Tag: "r/web:t", Digest: tc.image}},
				Desired: []*unstructured.Unstructured{configObject("ConfigMap", "web-app", bad), configObject("Secret", "web-keys", newToken),
					testDeployment("web", tc.image, 1), testDeployment("web-worker", imgA, 1)},
				Nodes: []plan.NodePlan{{Node: "web", Changes: []plan.Change{update("ConfigMap", "web-app"), update("Secret", "web-keys"), templateChange("web")}}}}
			e := New(Options{Kube: r.f, Timeout: 300 * time.Millisecond, Emit: func(ev event.Event) { r.events = append(r.events, ev) }})
			err := e.Apply(ctx, p, Target{Group: r.group, Namespace: "demo", Store: r.store})
			if (err != nil) != (tc.image == imgCrash) {
				t.Fatalf("apply: %v", err)
			}
			for _, o := range []struct {
				kind, name string
				want       map[string]any
			}{{"ConfigMap", "web-app", tc.wantConfig}, {"Secret", "web-keys", tc.wantKey}} {
				live, _ := r.f.Get(ctx, plan.Key{Kind: o.kind, Namespace: "demo", Name: o.name})
				if d := cmp.Diff(o.want, live.Object["data"]); d != "" {
					t.Errorf("%s %s after the apply (-want +got):\n%s", o.kind, o.name, d)
				}
			}
			said := tc.wantEvent == ""
			for _, ev := range r.events {
				said = said || ev.Message == tc.wantEvent
				if strings.Contains(ev.Message, "bmV3") || strings.Contains(ev.Message, "b2xk") {
					t.Errorf("an event shows a secret value: %q", ev.Message)
				}
			}
			if !said {
				t.Errorf("no event says %q", tc.wantEvent)
			}
		})
	}
}

// withConfigHash is d with its pod template's config hash set to hash.
func withConfigHash(d *unstructured.Unstructured, hash string) *unstructured.Unstructured {
	if err := unstructured.SetNestedField(d.Object, hash, "spec", "template", "metadata", "annotations", spec.AnnotationConfigHash); err != nil {
		panic(err)
	}
	return d
}

// TestRollbackNamesConfigItReads (issue 35 item 4): when a run killed after it changed the
// node's config left no copy of the old one, the next apply's failed rollout sets back the
// template with the failed template's config hash: it names the config its pod reads, so that
// a file reverted to the old config rolls the pod out again. A run that put the config back
// keeps the old hash.
func TestRollbackNamesConfigItReads(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name     string
		changes  bool // this run changes the ConfigMap (and so puts it back)
		wantHash string
	}{
		{name: "config changed by a killed run", wantHash: "sha256:new"},
		{name: "config changed and put back by this run", changes: true, wantHash: "sha256:old"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newApplyRun(t, imgA)
			if _, err := r.f.Apply(ctx, withConfigHash(testDeployment("web", imgA, 1), "sha256:old"), applyOptions()); err != nil {
				t.Fatal(err)
			}
			live := map[string]any{"level": "no-such-level"} // the killed run's
			changes := []plan.Change{templateChange("web")}
			if tc.changes {
				live = map[string]any{"level": "info"}
				changes = append(changes, plan.Change{Key: plan.Key{Kind: "ConfigMap", Namespace: "demo", Name: "web-app"}, Action: plan.Update, Diff: []plan.FieldDiff{{Path: "data"}}})
			}
			if _, err := r.f.Apply(ctx, configObject("ConfigMap", "web-app", live), applyOptions()); err != nil {
				t.Fatal(err)
			}
			p := &plan.Plan{Group: "demo", Namespace: "demo", StateSerial: r.store.Doc.Serial,
				MachineIDs: map[string]string{"web": "id"},
				Images:     []plan.Image{{Name: "web", Node: "web", Tag: "r/web:t", Digest: imgCrash}},
				Desired: []*unstructured.Unstructured{configObject("ConfigMap", "web-app", map[string]any{"level": "no-such-level"}),
					withConfigHash(testDeployment("web", imgCrash, 1), "sha256:new"), testDeployment("web-worker", imgA, 1)},
				Nodes: []plan.NodePlan{{Node: "web", Changes: changes}}}
			e := New(Options{Kube: r.f, Timeout: 300 * time.Millisecond})
			if err := e.Apply(ctx, p, Target{Group: r.group, Namespace: "demo", Store: r.store}); err == nil || !strings.Contains(err.Error(), "rolled back to sha256:a") {
				t.Fatalf("apply: %v, want a rollback", err)
			}
			d, _ := r.f.Get(ctx, depKey("web"))
			if got, _, _ := unstructured.NestedString(d.Object, "spec", "template", "metadata", "annotations", spec.AnnotationConfigHash); got != tc.wantHash {
				t.Errorf("the template set back has config hash %q, want %q", got, tc.wantHash)
			}
			if got := r.f.Image("web"); got != imgA {
				t.Errorf("web runs %s after the rollback, want %s", got, imgA)
			}
		})
	}
}
