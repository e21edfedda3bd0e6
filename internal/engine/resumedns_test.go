package engine

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"slipway.dev/slipway/internal/dns"
	"slipway.dev/slipway/internal/event"
	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/spec"
	"slipway.dev/slipway/internal/state"
)

// publishedFake is a fake cluster with kube-system (whose UID names the records' owner) and
// a load balancer that gives Service mail the address 192.0.2.7, and a fake DNS server.
func publishedFake(t *testing.T) (*fakeCluster, *fakeDNS) {
	t.Helper()
	f := newFakeCluster()
	ks := &unstructured.Unstructured{}
	ks.SetAPIVersion("v1")
	ks.SetKind("Namespace")
	ks.SetName("kube-system")
	ks.SetUID("uid-ks")
	f.Objects[plan.Key{Kind: "Namespace", Name: "kube-system"}] = ks
	f.Pub.Addresses = map[string]string{"mail": "192.0.2.7"}
	return f, newFakeDNS()
}

// mailGroup is publishGroup's node mail alone: its own address, name mail.example.org.
func mailGroup() *spec.Group {
	g := publishGroup(time.Second)
	g.Nodes = g.Nodes[:1]
	g.Publish.Gateway = nil
	g.Publish.TTL = 300
	return g
}

// nodeDeployment is testDeployment labelled with its node, as render makes it.
func nodeDeployment(name, image string, replicas int32) *unstructured.Unstructured {
	u := testDeployment(name, image, replicas)
	l := u.GetLabels()
	l[spec.LabelNode] = name
	u.SetLabels(l)
	return u
}

// Resume sets back a node whose template changed while suspended and does not become ready:
// it then runs ready on its last ready template, and its names are published again, while
// resume fails naming the rollback (issue 35 item 11).
func TestResumeRolledBackPublishes(t *testing.T) {
	ctx := context.Background()
	f, d := publishedFake(t)
	if _, err := f.Apply(ctx, nodeDeployment("mail", imgA, 1), applyOptions()); err != nil {
		t.Fatal(err)
	}
	ready := f.Deps["mail"].RSs[0].Labels[appsv1.DefaultDeploymentUniqueLabelKey]
	// Suspended, then an apply changed its template (to one that crashes) at 0 replicas.
	if _, err := f.Apply(ctx, nodeDeployment("mail", imgCrash, 0), applyOptions()); err != nil {
		t.Fatal(err)
	}
	store := &memStore{Doc: &state.Document{Group: "demo", Nodes: map[string]*state.NodeState{"mail": {
		Suspended: true, ReadyTemplate: ready, PreviousReady: imgA,
		LastRollout: &event.Rollout{Result: event.RolloutInProgress, Digest: "sha256:crash"},
	}}}}
	e := New(Options{Kube: f, DNS: d, Timeout: time.Second, Parallelism: 2})
	err := e.Scale(ctx, Target{Group: mailGroup(), Namespace: "demo", Store: store}, false)
	if err == nil || !strings.Contains(err.Error(), "rolled back to sha256:a") {
		t.Fatalf("resume = %v, want the rollback to sha256:a", err)
	}
	if got := f.Image("mail"); got != imgA {
		t.Fatalf("mail runs %s, want %s (set back)", got, imgA)
	}
	if diff := cmp.Diff([]string{"A 192.0.2.7"}, d.Records("mail.example.org", dns.KindAddress)); diff != "" {
		t.Errorf("mail.example.org after resume set the node back (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]state.DNSRecord{{Name: "mail.example.org", Kind: "address", Zone: "example.org"}}, store.Doc.Nodes["mail"].DNS); diff != "" {
		t.Errorf("state's dns of mail (-want +got):\n%s", diff)
	}
}
