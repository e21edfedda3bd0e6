package plan

import (
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"slipway.dev/slipway/internal/spec"
)

// publishGroup is node www behind the Gateway (80 and 443), node tls behind it with 443 only,
// node mail with its own address (25) and node db without names.
func publishGroup(publish bool) *spec.Group {
	tcp := func(ns ...int32) []spec.Port {
		var out []spec.Port
		for _, n := range ns {
			out = append(out, spec.Port{Protocol: spec.TCP, Number: n})
		}
		return out
	}
	g := &spec.Group{Name: "demo", Nodes: []*spec.Node{
		{Name: "db"},
		{Name: "mail", PublishedNames: []string{"mail.example.org"}, Firewall: spec.Firewall{Published: tcp(25)}},
		{Name: "tls", PublishedNames: []string{"tls.example.org"}, Firewall: spec.Firewall{Published: tcp(443)}},
		{Name: "www", PublishedNames: []string{"www.example.org"}, Firewall: spec.Firewall{Published: tcp(80, 443)}},
	}}
	if publish {
		g.Publish = &spec.Publish{Zone: "example.org", AddressTimeout: 2 * time.Minute,
			Gateway: &spec.GatewayRef{Namespace: "infra", Name: "public"}}
	}
	return g
}

func TestBuildStepsAddress(t *testing.T) {
	k := func(kind, name string) Key { return Key{Kind: kind, Namespace: "demo", Name: name} }
	kp := func(kind, name string) *Key { key := k(kind, name); return &key }
	changed := func(node string) NodePlan {
		return NodePlan{Node: node, Changes: []Change{
			{Key: k("Service", node), Action: Update},
			{Key: k("Deployment", node), Action: Update},
		}}
	}
	deploy := func(node string) []Step {
		return []Step{
			{Kind: StepApplyObjects, Node: node, Objects: []Key{k("Service", node)}},
			{Kind: StepApplyDeployment, Node: node, Object: kp("Deployment", node), Action: Update},
			{Kind: StepAwaitRollout, Node: node, Object: kp("Deployment", node), Replicas: 1, Limit: 5 * time.Minute, Rollback: RollbackLastReady},
		}
	}
	suspendedDeploy := func(node string) []Step {
		steps := deploy(node)
		steps[2].Replicas = 0
		return steps
	}
	// with puts steps into a node's deploy steps: before at index 1 (after its objects),
	// after at the end (after the rollout).
	with := func(steps []Step, before, after []Step) []Step {
		out := append([]Step{steps[0]}, before...)
		return append(append(out, steps[1:]...), after...)
	}
	const limit = 2 * time.Minute
	wwwRoutes := []Key{k("TLSRoute", "www"), k("HTTPRoute", "www")}
	tlsRoutes := []Key{k("TLSRoute", "tls")}
	tests := []struct {
		name      string
		publish   bool
		suspended bool
		want      []NodeSteps
	}{
		{"without publish: nothing awaited", false, false, []NodeSteps{
			{Node: "db", Steps: deploy("db")}, {Node: "mail", Steps: deploy("mail")},
			{Node: "tls", Steps: deploy("tls")}, {Node: "www", Steps: deploy("www")},
		}},
		{"with publish", true, false, []NodeSteps{
			{Node: "db", Steps: deploy("db")},
			{Node: "mail", Steps: with(deploy("mail"), []Step{{Kind: StepAwaitAddress, Node: "mail", Object: kp("Service", "mail"), Limit: limit}}, nil)},
			{Node: "tls", Steps: with(deploy("tls"),
				[]Step{{Kind: StepAwaitAccepted, Node: "tls", Objects: tlsRoutes, Limit: limit}},
				[]Step{{Kind: StepAwaitResolved, Node: "tls", Objects: tlsRoutes, Limit: limit}})},
			{Node: "www", Steps: with(deploy("www"),
				[]Step{{Kind: StepAwaitAccepted, Node: "www", Objects: wwwRoutes, Limit: limit}},
				[]Step{{Kind: StepAwaitResolved, Node: "www", Objects: wwwRoutes, Limit: limit}})},
		}},
		{"suspended: no pod, nothing to resolve to", true, true, []NodeSteps{
			{Node: "db", Steps: suspendedDeploy("db")},
			{Node: "mail", Steps: with(suspendedDeploy("mail"), []Step{{Kind: StepAwaitAddress, Node: "mail", Object: kp("Service", "mail"), Limit: limit}}, nil)},
			{Node: "tls", Steps: with(suspendedDeploy("tls"), []Step{{Kind: StepAwaitAccepted, Node: "tls", Objects: tlsRoutes, Limit: limit}}, nil)},
			{Node: "www", Steps: with(suspendedDeploy("www"), []Step{{Kind: StepAwaitAccepted, Node: "www", Objects: wwwRoutes, Limit: limit}}, nil)},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &Plan{Namespace: "demo", Suspended: tt.suspended,
				Nodes: []NodePlan{changed("db"), changed("mail"), changed("tls"), changed("www")}}
			got := BuildSteps(p, publishGroup(tt.publish), stepsLimit)
			if d := cmp.Diff(tt.want, got.Nodes); d != "" {
				t.Errorf("steps (-want +got):\n%s", d)
			}
		})
	}
}

// A node whose Service is replaced gives back the address its names point at: its names move
// before the rollout. Behind the Gateway, make before break: routes Accepted and names on the
// Gateway's address before the LoadBalancer Service goes; with an address of its own, names
// on the new address as soon as there is one. Mail records stay after the relay's rollout
// (issue 35 item 2).
func TestBuildStepsMovedAddress(t *testing.T) {
	k := func(kind, name string) Key { return Key{Kind: kind, Namespace: "demo", Name: name} }
	kp := func(kind, name string) *Key { key := k(kind, name); return &key }
	const limit = 2 * time.Minute
	rollout := func(node string) []Step {
		return []Step{
			{Kind: StepApplyDeployment, Node: node, Object: kp("Deployment", node), Action: Update},
			{Kind: StepAwaitRollout, Node: node, Object: kp("Deployment", node), Replicas: 1, Limit: 5 * time.Minute, Rollback: RollbackLastReady},
		}
	}
	name := func(node, action string) RecordChange {
		return RecordChange{Name: node + ".example.org", Kind: "address", Action: Action(action), New: []string{"A 192.0.2.1"}}
	}
	mx := RecordChange{Name: "example.org", Kind: "mx", Action: Create, New: []string{"MX 10 mail.example.org"}}
	wwwRoutes := []Key{k("TLSRoute", "www"), k("HTTPRoute", "www")}
	tests := []struct {
		name string
		np   NodePlan
		want []Step
	}{
		{"to the Gateway: routes accepted, names moved, then the Service replaced", NodePlan{Node: "www",
			Changes: []Change{{Key: k("Service", "www"), Action: Replace}, {Key: k("TLSRoute", "www"), Action: Create},
				{Key: k("HTTPRoute", "www"), Action: Create}, {Key: k("Deployment", "www"), Action: Update}},
			Records: []RecordChange{name("www", "update")}},
			slices.Concat([]Step{
				{Kind: StepApplyObjects, Node: "www", Objects: wwwRoutes},
				{Kind: StepAwaitAccepted, Node: "www", Objects: wwwRoutes, Limit: limit},
				{Kind: StepPublishDNS, Node: "www", Payload: DNSPublish{[]RecordChange{name("www", "update")}}},
				{Kind: StepApplyObjects, Node: "www", Objects: []Key{k("Service", "www")}},
			}, rollout("www"), []Step{{Kind: StepAwaitResolved, Node: "www", Objects: wwwRoutes, Limit: limit}})},
		{"an address of its own again: names on the new address before the rollout, mail after", NodePlan{Node: "mail",
			Changes: []Change{{Key: k("Service", "mail"), Action: Replace}, {Key: k("Deployment", "mail"), Action: Update}},
			Records: []RecordChange{name("mail", "update"), mx}},
			slices.Concat([]Step{
				{Kind: StepApplyObjects, Node: "mail", Objects: []Key{k("Service", "mail")}},
				{Kind: StepAwaitAddress, Node: "mail", Object: kp("Service", "mail"), Limit: limit},
				{Kind: StepPublishDNS, Node: "mail", Payload: DNSPublish{[]RecordChange{name("mail", "update")}}},
			}, rollout("mail"), []Step{{Kind: StepPublishDNS, Node: "mail", Payload: DNSPublish{[]RecordChange{mx}}}})},
		{"a Service only updated: names after the rollout", NodePlan{Node: "mail",
			Changes: []Change{{Key: k("Service", "mail"), Action: Update}, {Key: k("Deployment", "mail"), Action: Update}},
			Records: []RecordChange{name("mail", "update")}},
			slices.Concat([]Step{
				{Kind: StepApplyObjects, Node: "mail", Objects: []Key{k("Service", "mail")}},
				{Kind: StepAwaitAddress, Node: "mail", Object: kp("Service", "mail"), Limit: limit},
			}, rollout("mail"), []Step{{Kind: StepPublishDNS, Node: "mail", Payload: DNSPublish{[]RecordChange{name("mail", "update")}}}})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &Plan{Namespace: "demo", Nodes: []NodePlan{tt.np}}
			got := BuildSteps(p, publishGroup(true), stepsLimit).Node(tt.np.Node)
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("steps (-want +got):\n%s", d)
			}
		})
	}
}
