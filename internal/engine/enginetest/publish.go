package enginetest

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"slipway.dev/slipway/internal/plan"
)

// Publish plays the address lane's side of the cluster: a Gateway and its class, a
// Gateway controller that writes a route's status, and a load balancer that gives Services
// an address.
type Publish struct {
	Gateway *gwv1.Gateway
	Class   *gwv1.GatewayClass
	// RouteStatus is the status the controller writes for an applied route at generation 1
	// (the fake applies each route once); nil: no controller answers.
	RouteStatus func(k plan.Key) gwv1.RouteStatus
	// Addresses are the load balancer's addresses by Service name; a Service without one
	// never gets an address.
	Addresses map[string]string
}

func (f *Cluster) Gateway(_ context.Context, ns, name string) (*gwv1.Gateway, *gwv1.GatewayClass, error) {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	gw := f.Pub.Gateway
	if gw == nil || gw.Namespace != ns || gw.Name != name {
		return nil, nil, nil
	}
	return gw.DeepCopy(), f.Pub.Class.DeepCopy(), nil
}

// WaitRoute judges the status the controller wrote once; a route it is not done with waits
// until ctx ends, as no later status ever comes.
func (f *Cluster) WaitRoute(ctx context.Context, k plan.Key, done func(int64, gwv1.RouteStatus) (bool, error)) error {
	f.log("wait " + k.Kind + " " + k.Name)
	f.Mu.Lock()
	_, applied := f.Objects[k]
	status := f.Pub.RouteStatus
	f.Mu.Unlock()
	if applied && status != nil {
		if ok, err := done(1, status(k)); ok || err != nil {
			return err
		}
	}
	<-ctx.Done()
	return ctx.Err()
}

func (f *Cluster) WaitService(ctx context.Context, ns, name string, done func(*corev1.Service) bool) error {
	f.log("wait Service " + name)
	f.Mu.Lock()
	addr := f.Pub.Addresses[name]
	f.Mu.Unlock()
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer}}
	if addr != "" {
		svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: addr}}
	}
	if done(svc) {
		return nil
	}
	<-ctx.Done()
	return ctx.Err()
}

// ServiceIngress is the load balancer's address of the Service (Publish.Addresses).
func (f *Cluster) ServiceIngress(_ context.Context, _, name string) ([]string, error) {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	if a := f.Pub.Addresses[name]; a != "" {
		return []string{a}, nil
	}
	return nil, nil
}
