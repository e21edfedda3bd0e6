package engine

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"slipway.dev/slipway/internal/kube"
	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/render"
	"slipway.dev/slipway/internal/spec"
	"slipway.dev/slipway/internal/state"
	"slipway.dev/slipway/internal/status"
)

const testController = "example.org/gateway-controller"

// publishGroup has node www behind the Gateway infra/public (80 and 443) and node mail with
// its own address (25).
// The route conditions the address steps wait for (publish/routes.go).
const (
	condAccepted     = string(gwv1.RouteConditionAccepted)
	condResolvedRefs = string(gwv1.RouteConditionResolvedRefs)
)

func publishGroup(timeout time.Duration) *spec.Group {
	tcp := func(ns ...int32) []spec.Port {
		var out []spec.Port
		for _, n := range ns {
			out = append(out, spec.Port{Protocol: spec.TCP, Number: n})
		}
		return out
	}
	return &spec.Group{Name: "demo", Namespace: "demo",
		Publish: &spec.Publish{Zone: "example.org", AddressTimeout: timeout,
			Gateway: &spec.GatewayRef{Namespace: "infra", Name: "public", From: "K8S_GATEWAY"}},
		Nodes: []*spec.Node{
			{Name: "mail", Init: spec.InitNone, PublishedNames: []string{"mail.example.org"},
				Firewall: spec.Firewall{Served: tcp(25), Published: tcp(25)}},
			{Name: "www", Init: spec.InitNone, PublishedNames: []string{"www.example.org"},
				Firewall: spec.Firewall{Served: tcp(80, 443), Published: tcp(80, 443)}},
		}}
}

// routeStatus is the status a controller writes: one parent entry for infra/public with the
// conditions given as type → status/reason, observed at generation gen.
func routeStatus(controller string, gen int64, conds map[string][2]string) func(plan.Key) gwv1.RouteStatus {
	return func(plan.Key) gwv1.RouteStatus {
		e := gwv1.RouteParentStatus{ControllerName: gwv1.GatewayController(controller),
			ParentRef: gwv1.ParentReference{Namespace: ptr.To(gwv1.Namespace("infra")), Name: "public"}}
		for t, sr := range conds {
			e.Conditions = append(e.Conditions, metav1.Condition{Type: t, Status: metav1.ConditionStatus(sr[0]), Reason: sr[1], ObservedGeneration: gen, Message: "from the fake"})
		}
		return gwv1.RouteStatus{Parents: []gwv1.RouteParentStatus{e}}
	}
}

// publishApply applies the group, every object new, against f.
func publishApply(t *testing.T, f *fakeCluster, g *spec.Group) error {
	t.Helper()
	objs, err := render.Objects(render.Input{Group: g, Images: map[string]string{"www": imgA, "mail": imgA},
		MachineIDs: map[string]string{"www": "id-www", "mail": "id-mail"}})
	if err != nil {
		t.Fatal(err)
	}
	p := &plan.Plan{Group: "demo", Namespace: "demo", MachineIDs: map[string]string{"www": "id-www", "mail": "id-mail"}}
	byNode := map[string]*plan.NodePlan{}
	for _, o := range objs {
		u, err := kube.ToUnstructured(o)
		if err != nil {
			t.Fatal(err)
		}
		p.Desired = append(p.Desired, u)
		node := u.GetLabels()[spec.LabelNode]
		if byNode[node] == nil {
			byNode[node] = &plan.NodePlan{Node: node}
		}
		byNode[node].Changes = append(byNode[node].Changes, plan.Change{Key: plan.KeyOf(u), Action: plan.Create})
	}
	for _, n := range []string{"", "mail", "www"} {
		p.Nodes = append(p.Nodes, *byNode[n])
	}
	store := &memStore{Doc: &state.Document{Group: "demo"}}
	e := New(Options{Kube: f, Timeout: time.Second, Parallelism: 2})
	return e.Apply(context.Background(), p, Target{Group: g, Namespace: "demo", Store: store})
}

// callsOf are f's calls about node's objects.
func callsOf(f *fakeCluster, node string) []string {
	var out []string
	for _, c := range f.Calls() {
		if strings.HasSuffix(c, " "+node) {
			out = append(out, c)
		}
	}
	return out
}

// The address lane's order (SPEC §7): a node's routes are Accepted before its rollout and
// resolved after it; a node with its own address has one before its rollout; a node that
// fails there is not rolled out, and the other node goes on.
func TestApplyPublishAddress(t *testing.T) {
	const limit = 100 * time.Millisecond
	accepted := map[string][2]string{condAccepted: {"True", "Accepted"}, condResolvedRefs: {"True", "ResolvedRefs"}}
	wwwObjects := []string{"apply NetworkPolicy www", "apply Service www", "apply TLSRoute www", "apply HTTPRoute www"}
	wwwAll := append(append([]string{}, wwwObjects...),
		"wait TLSRoute www", "wait HTTPRoute www", "apply Deployment www", "wait TLSRoute www", "wait HTTPRoute www")
	wwwNoRollout := append(append([]string{}, wwwObjects...), "wait TLSRoute www")
	mailObjects := []string{"apply NetworkPolicy mail", "apply Service mail", "wait Service mail"}
	mailAll := append(append([]string{}, mailObjects...), "apply Deployment mail")
	tests := []struct {
		name      string
		status    func(plan.Key) gwv1.RouteStatus
		addresses map[string]string
		wantErr   []string // parts of the error; none: no error
		wantWWW   []string
		wantMail  []string
	}{
		{"accepted, resolved, an address", routeStatus(testController, 1, accepted), map[string]string{"mail": "192.0.2.7"},
			nil, wwwAll, mailAll},
		{"a rejected route fails before the rollout", routeStatus(testController, 1, map[string][2]string{condAccepted: {"False", "NotAllowedByListeners"}}), map[string]string{"mail": "192.0.2.7"},
			[]string{"node www: TLSRoute demo/www: not Accepted by gateway infra/public: Accepted is False (NotAllowedByListeners: from the fake)"}, wwwNoRollout, mailAll},
		{"an entry of an older generation is no acceptance", routeStatus(testController, 0, accepted), map[string]string{"mail": "192.0.2.7"},
			[]string{"node www: TLSRoute demo/www: not Accepted by gateway infra/public within 100ms: its controller's Accepted is of generation 0, the route is at 1"}, wwwNoRollout, mailAll},
		{"another controller's entry does not count", routeStatus("example.org/other", 1, accepted), map[string]string{"mail": "192.0.2.7"},
			[]string{"node www: TLSRoute demo/www: not Accepted by gateway infra/public within 100ms: no status from its controller " + testController}, wwwNoRollout, mailAll},
		{"a controller that never answers", nil, map[string]string{"mail": "192.0.2.7"},
			[]string{"node www: TLSRoute demo/www: not Accepted by gateway infra/public within 100ms: no status from its controller " + testController}, wwwNoRollout, mailAll},
		{"references that never resolve fail after the rollout", routeStatus(testController, 1, map[string][2]string{condAccepted: {"True", "Accepted"}, condResolvedRefs: {"False", "BackendNotFound"}}), map[string]string{"mail": "192.0.2.7"},
			[]string{"node www: TLSRoute demo/www: not resolved (ResolvedRefs) by gateway infra/public within 100ms: ResolvedRefs is False (BackendNotFound: from the fake)"},
			append(append([]string{}, wwwObjects...), "wait TLSRoute www", "wait HTTPRoute www", "apply Deployment www", "wait TLSRoute www"), mailAll},
		{"no load-balancer address fails the node before its rollout", routeStatus(testController, 1, accepted), nil,
			[]string{"node mail: service demo/mail: no load-balancer address within 100ms (status.loadBalancer.ingress is empty): not rolled out"}, wwwAll, mailObjects},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeCluster()
			f.Pub = fakePublish{
				Gateway: &gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "infra", Name: "public"}, Spec: gwv1.GatewaySpec{GatewayClassName: "fake"},
					Status: gwv1.GatewayStatus{Addresses: []gwv1.GatewayStatusAddress{{Value: "192.0.2.1"}}}},
				Class:       &gwv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: "fake"}, Spec: gwv1.GatewayClassSpec{ControllerName: testController}},
				RouteStatus: tt.status, Addresses: tt.addresses,
			}
			err := publishApply(t, f, publishGroup(limit))
			switch {
			case len(tt.wantErr) == 0 && err != nil:
				t.Fatalf("Apply: %v", err)
			case len(tt.wantErr) > 0 && err == nil:
				t.Fatalf("Apply succeeded, want an error with %q", tt.wantErr)
			}
			for _, part := range tt.wantErr {
				if !strings.Contains(err.Error(), part) {
					t.Errorf("error %q lacks %q", err, part)
				}
			}
			if d := cmp.Diff(tt.wantWWW, callsOf(f, "www")); d != "" {
				t.Errorf("calls of www (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tt.wantMail, callsOf(f, "mail")); d != "" {
				t.Errorf("calls of mail (-want +got):\n%s", d)
			}
		})
	}
}

// status shows each published node's names and the address they point at: the Gateway's for
// www, the Service's ingress for mail; nothing for a node without names.
func TestStatusAddresses(t *testing.T) {
	f := newFakeCluster()
	f.Pub = fakePublish{
		Gateway: &gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "infra", Name: "public"},
			Status: gwv1.GatewayStatus{Addresses: []gwv1.GatewayStatusAddress{{Value: "192.0.2.1"}, {Value: "2001:db8::1"}}}},
		Addresses: map[string]string{"mail": "192.0.2.7"},
	}
	g := publishGroup(time.Second)
	g.Nodes = append(g.Nodes, &spec.Node{Name: "db"})
	gs := &status.Group{Nodes: []status.Node{{Node: "db"}, {Node: "mail"}, {Node: "www"}}}
	e := New(Options{Kube: f})
	if err := publishLane(e).Addresses(context.Background(), Target{Group: g, Namespace: "demo"}.lent(), gs); err != nil {
		t.Fatal(err)
	}
	want := []status.Node{{Node: "db"},
		{Node: "mail", Names: []string{"mail.example.org"}, Address: []string{"192.0.2.7"}},
		{Node: "www", Names: []string{"www.example.org"}, Address: []string{"192.0.2.1", "2001:db8::1"}}}
	if d := cmp.Diff(want, gs.Nodes); d != "" {
		t.Errorf("status (-want +got):\n%s", d)
	}
}
