// Package publish is the publishing lane (SPEC §7): the Gateway a node's routes attach to, the
// load-balancer address of a node's own Service, and the DNS records of its names and of the
// zone's mail, planned, published, retired on suspend and destroy, and checked by status. It
// reaches the cluster through Cluster and the DNS server through Server, and the engine only
// through the hooks of internal/engine/lane.
package publish

import (
	"context"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"slipway.dev/slipway/internal/dns"
	"slipway.dev/slipway/internal/engine/lane"
	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/state"
	"slipway.dev/slipway/internal/status"
)

// Cluster is what the lane reads of the cluster: the Gateway and what the address steps wait
// for (routes accepted and resolved by the Gateway's controller, a Service's load-balancer
// address; the waits end when done says so or ctx ends), a Service's addresses, and the
// namespace kube-system, whose UID names the cluster in the records' owner.
type Cluster interface {
	Gateway(ctx context.Context, ns, name string) (*gwv1.Gateway, *gwv1.GatewayClass, error)
	WaitRoute(ctx context.Context, k plan.Key, done func(generation int64, st gwv1.RouteStatus) (bool, error)) error
	WaitService(ctx context.Context, ns, name string, done func(*corev1.Service) bool) error
	// ServiceIngress is a LoadBalancer Service's addresses: what a node's names point at.
	ServiceIngress(ctx context.Context, ns, name string) ([]string, error)
	Namespace(ctx context.Context, ns string) (*unstructured.Unstructured, error)
}

// Server reads and changes the records of SPEC §7; *dns.Client satisfies it.
type Server interface {
	Read(ctx context.Context, sets []dns.Set) ([]dns.Seen, error)
	Apply(ctx context.Context, c dns.Change) error
}

var _ Server = (*dns.Client)(nil)

// Lane is the publishing lane of an engine.
type Lane struct {
	env   lane.Env
	kube  Cluster
	given Server // the engine's (a test's); nil: made from the group's publish:

	mu  sync.Mutex
	dns Server // the one made from the group's publish:
}

// New returns the lane; srv nil makes the DNS server from the group's publish: when needed.
func New(env lane.Env, kube Cluster, srv Server) *Lane {
	return &Lane{env: env, kube: kube, given: srv}
}

// Name names the lane.
func (l *Lane) Name() string { return "publish" }

// addressKey is the node's slot of what its names point at, once the address steps waited
// for it; publish-dns reads it (nil: it asks the node's Service).
var addressKey = lane.NewKey[[]string]("the node's address")

// addressesKey is the plan's slot of each published node's address as far as Prepare knew it.
var addressesKey = lane.NewKey[map[string][]string]("the published nodes' addresses")

// Executors are the lane's steps.
func (l *Lane) Executors() map[plan.StepKind]lane.Executor {
	return map[plan.StepKind]lane.Executor{
		plan.StepAwaitAddress:  l.awaitAddress,  // address.go
		plan.StepAwaitAccepted: l.awaitAccepted, // routes.go
		plan.StepAwaitResolved: l.awaitResolved, // routes.go
		plan.StepRetireDNS:     l.retireDNS,     // retiredns.go
		plan.StepPublishDNS:    l.publishDNS,    // publishdns.go
	}
}

// Prepare checks the Gateway and reads each published node's address before the objects are
// rendered (publishPlan).
func (l *Lane) Prepare(ctx context.Context, pr *lane.PlanRun) error {
	addrs, err := l.publishPlan(ctx, pr.Target, pr.Live, pr.Namespace)
	if err != nil {
		return err
	}
	lane.Set(&pr.Slots, addressesKey, addrs)
	return nil
}

// Amend puts the addresses Prepare read into p and plans the DNS records (PlanDNS).
func (l *Lane) Amend(ctx context.Context, pr *lane.PlanRun, p *plan.Plan) error {
	p.Addresses = lane.Get(&pr.Slots, addressesKey)
	return l.PlanDNS(ctx, pr.Target, pr.Doc, p)
}

// Refuse refuses a destroy of a group whose state lists records its file cannot retire.
func (l *Lane) Refuse(t lane.Target, doc *state.Document) error { return refuseLeftRecords(t, doc) }

// Destroy retires every record set of the group before its objects go.
func (l *Lane) Destroy(ctx context.Context, t lane.Target, _ *state.Document) error {
	return l.destroyDNS(ctx, t)
}

// Suspend retires the group's published names before its Deployments go to 0.
func (l *Lane) Suspend(ctx context.Context, t lane.Target, rec lane.Recorder) error {
	return l.suspendDNS(ctx, t, rec)
}

// Resume publishes node's names again once it runs.
func (l *Lane) Resume(ctx context.Context, t lane.Target, rec lane.Recorder, node string) error {
	return l.resumeDNS(ctx, t, rec, node)
}

// Status adds each published node's names and address, and whether the DNS server agrees.
func (l *Lane) Status(ctx context.Context, t lane.Target, doc *state.Document, gs *status.Group) error {
	if err := l.Addresses(ctx, t, gs); err != nil {
		return err
	}
	l.statusDNS(ctx, t, doc, gs)
	return nil
}

var (
	_ lane.Stepper   = (*Lane)(nil)
	_ lane.Preparer  = (*Lane)(nil)
	_ lane.Amender   = (*Lane)(nil)
	_ lane.Destroyer = (*Lane)(nil)
	_ lane.Suspender = (*Lane)(nil)
	_ lane.Reporter  = (*Lane)(nil)
)
