package spire

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"slipway.dev/slipway/internal/engine/enginetest"
	"slipway.dev/slipway/internal/engine/lane"
	"slipway.dev/slipway/internal/event"
	"slipway.dev/slipway/internal/kube"
	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/spec"
	"slipway.dev/slipway/internal/state"
)

// rightsStandin stands in for the cluster as the SPIRE lane reads it: only the
// token-review rights, by deployment (owned) or someone else's of that name (foreign).
type rightsStandin struct {
	owned, foreign map[string]bool
	deleted        []string
}

func (r *rightsStandin) KubeSystemUID(context.Context) (string, error) { return "uid", nil }
func (r *rightsStandin) SchedulableNodes(context.Context) (int, error) { return 1, nil }
func (r *rightsStandin) SpireAgentPods(context.Context, string) (kube.AgentPods, error) {
	return kube.AgentPods{}, nil
}
func (r *rightsStandin) SpireRBAC(_ context.Context, _, deployment string) (kube.RBACState, error) {
	switch {
	case r.owned[deployment]:
		return kube.RBACState{}, nil
	case r.foreign[deployment]:
		return kube.RBACState{Role: kube.RBACForeign, Binding: kube.RBACForeign}, nil
	}
	return kube.RBACState{Role: "missing", Binding: "missing"}, nil
}
func (r *rightsStandin) ApplySpireRBAC(context.Context, string, string) error { return nil }
func (r *rightsStandin) DeleteSpireRBAC(_ context.Context, deployment string) error {
	r.deleted = append(r.deleted, deployment)
	delete(r.owned, deployment)
	return nil
}
func (r *rightsStandin) ServiceAccountToken(context.Context, string, string, time.Duration) (kube.AccountToken, error) {
	return kube.AccountToken{}, nil
}
func (r *rightsStandin) APIServer() (string, []byte, error) { return "", nil, nil }

// Issue 43 item 9: a file whose `spire:` was removed leaves no token-review rights behind:
// plan shows their removal, apply and destroy remove the deployment's own (found again, not
// read from a plan), and someone else's of that name stays.
func TestSpireLeftoverRights(t *testing.T) {
	ctx := context.Background()
	r := &rightsStandin{owned: map[string]bool{"shop.front": true}, foreign: map[string]bool{"bars": true}}
	h := New(lane.Env{Emit: func(event.Event) {}}, Options{Kube: r})
	target := func(name string) lane.Target {
		return lane.Target{Group: &spec.Group{Name: name}, Namespace: "shop-front"}
	}
	cs, err := h.leftovers(ctx, target("shop.front"), nil)
	if err != nil {
		t.Fatal(err)
	}
	name := kube.SpireRBACName("shop.front")
	want := []plan.SpireChange{
		{What: plan.SpireClusterRole, Name: name, Action: plan.Delete, Reason: "the file has no spire: any more"},
		{What: plan.SpireRoleBinding, Name: name, Action: plan.Delete, Reason: "the file has no spire: any more"},
	}
	if d := cmp.Diff(want, cs); d != "" {
		t.Fatalf("leftovers (-want +got):\n%s", d)
	}
	nr := &lane.NodeRun{Target: target("shop.front"), Rec: &enginetest.Recorder{Doc: &state.Document{}}}
	if err := h.applyStep(ctx, nr, plan.Step{Kind: plan.StepSpire, Payload: plan.SpireChanges(cs)}); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"shop.front"}, r.deleted); d != "" {
		t.Errorf("deleted rights (-want +got):\n%s", d)
	}
	for _, g := range []string{"shop.front", "bars", "never"} {
		if cs, err := h.leftovers(ctx, target(g), nil); err != nil || len(cs) != 0 {
			t.Errorf("%s: leftovers %v, %v", g, cs, err)
		}
		if err := h.destroy(ctx, target(g), nil); err != nil {
			t.Fatal(err)
		}
	}
	if len(r.deleted) != 1 {
		t.Errorf("destroy deleted rights of %v", r.deleted)
	}
	// A file with spire: is the lane's: no leftovers.
	withSpire := target("shop.front")
	withSpire.Group.Spire = &spec.Spire{}
	r.owned["shop.front"] = true
	if cs, err := h.leftovers(ctx, withSpire, nil); err != nil || cs != nil {
		t.Errorf("leftovers with spire: %v, %v", cs, err)
	}
}
