package engine

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"slipway.dev/slipway/internal/plan"
)

// fakePublish plays the address lane's side of the cluster: a Gateway and its class, a
// Gateway controller that writes a route's status, and a load balancer that gives Services
// an address.
type fakePublish struct {
	gateway *gwv1.Gateway
	class   *gwv1.GatewayClass
	// routeStatus is the status the controller writes for an applied route at generation 1
	// (the fake applies each route once); nil: no controller answers.
	routeStatus func(k plan.Key) gwv1.RouteStatus
	// addresses are the load balancer's addresses by Service name; a Service without one
	// never gets an address.
	addresses map[string]string
}

func (f *fakeCluster) Gateway(_ context.Context, ns, name string) (*gwv1.Gateway, *gwv1.GatewayClass, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	gw := f.pub.gateway
	if gw == nil || gw.Namespace != ns || gw.Name != name {
		return nil, nil, nil
	}
	return gw.DeepCopy(), f.pub.class.DeepCopy(), nil
}

// WaitRoute judges the status the controller wrote once; a route it is not done with waits
// until ctx ends, as no later status ever comes.
func (f *fakeCluster) WaitRoute(ctx context.Context, k plan.Key, done func(int64, gwv1.RouteStatus) (bool, error)) error {
	f.log("wait " + k.Kind + " " + k.Name)
	f.mu.Lock()
	_, applied := f.objects[k]
	status := f.pub.routeStatus
	f.mu.Unlock()
	if applied && status != nil {
		if ok, err := done(1, status(k)); ok || err != nil {
			return err
		}
	}
	<-ctx.Done()
	return ctx.Err()
}

func (f *fakeCluster) WaitService(ctx context.Context, ns, name string, done func(*corev1.Service) bool) error {
	f.log("wait Service " + name)
	f.mu.Lock()
	addr := f.pub.addresses[name]
	f.mu.Unlock()
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
