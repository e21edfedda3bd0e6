package engine

import (
	"context"
	"testing"
	"time"

	"slipway.dev/slipway/internal/plan"
)

// A node whose LoadBalancer Service is made again gets a new address: its names are planned
// as known after apply, not as unchanged at the address the old Service gives back, so that
// apply publishes them at the new one (issue 35 item 2).
func TestPlanDNSServiceReplaced(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		action      plan.Action
		wantRecords int
	}{{plan.Update, 0}, {plan.Replace, 1}} {
		t.Run(string(tc.action), func(t *testing.T) {
			f, d := publishedFake(t)
			store := publishedMail(d, "example.org")
			e := New(Options{Kube: f, DNS: d, Timeout: time.Second})
			p := &plan.Plan{Group: "demo", Namespace: "demo", Addresses: map[string][]string{"mail": {"192.0.2.7"}},
				Nodes: []plan.NodePlan{{Node: "mail", Changes: []plan.Change{{Key: plan.Key{Kind: "Service", Namespace: "demo", Name: "mail"}, Action: tc.action}}}}}
			if err := publishLane(e).PlanDNS(ctx, Target{Group: mailGroup(), Namespace: "demo", Store: store}.lent(), store.Doc, p); err != nil {
				t.Fatal(err)
			}
			rs := p.Node("mail").Records
			if len(rs) != tc.wantRecords || len(rs) == 1 && (!rs[0].Unknown || rs[0].Name != "mail.example.org") {
				t.Errorf("records of mail with its Service %s: %+v, want %d (known after apply)", tc.action, rs, tc.wantRecords)
			}
		})
	}
}
