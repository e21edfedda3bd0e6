package engine

import (
	"context"
	"runtime/debug"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"slipway.dev/slipway/internal/kube"
	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/spec"
	"slipway.dev/slipway/internal/state"
)

// gcRecorder is the fake cluster recording the collector's target at every object applied.
type gcRecorder struct {
	*fakeCluster
	percents []int
}

func (g *gcRecorder) Apply(ctx context.Context, obj runtime.Object, opts kube.ApplyOptions) (*unstructured.Unstructured, error) {
	p := debug.SetGCPercent(-1)
	debug.SetGCPercent(p)
	g.percents = append(g.percents, p)
	return g.fakeCluster.Apply(ctx, obj, opts)
}

// Issue 17: while the nodes roll out, the collector keeps the heap within half again of what
// is live (a 1,000-node first apply held 207 MiB for 72 MB in use); it is set back after, and
// an operator's GOGC wins.
func TestApplyCollectsMoreOftenWhileRollingOut(t *testing.T) {
	for _, tt := range []struct {
		name, gogc string
		want       int
	}{
		{"default", "", rolloutGCPercent},
		{"GOGC set", "100", 100},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("GOGC", tt.gogc)
			before := debug.SetGCPercent(100)
			defer debug.SetGCPercent(before)
			f := &gcRecorder{fakeCluster: newFakeCluster()}
			g := &spec.Group{Name: "demo", Nodes: []*spec.Node{{Name: "web"}}}
			p := &plan.Plan{Group: "demo", Namespace: "demo", MachineIDs: map[string]string{"web": "id"},
				Images:  []plan.Image{{Name: "web", Node: "web", Tag: "r/web:t", Digest: imgA}},
				Desired: []*unstructured.Unstructured{testDeployment("web", imgA, 1)},
				Nodes:   []plan.NodePlan{{Node: "web", Changes: []plan.Change{{Key: depKey("web"), Action: plan.Create}}}}}
			store := &memStore{Doc: &state.Document{Group: "demo"}}
			e := New(Options{Kube: f, Parallelism: 1, Timeout: time.Minute})
			if err := e.Apply(context.Background(), p, Target{Group: g, Namespace: "demo", Store: store}); err != nil {
				t.Fatal(err)
			}
			if len(f.percents) == 0 {
				t.Fatal("nothing applied")
			}
			for _, got := range f.percents {
				if got != tt.want {
					t.Errorf("GC percent while rolling out = %d, want %d", got, tt.want)
				}
			}
			if p := debug.SetGCPercent(100); p != 100 {
				t.Errorf("GC percent after the apply = %d, want 100 again", p)
			}
		})
	}
}
