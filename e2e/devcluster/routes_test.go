package devcluster_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"

	"slipway.dev/slipway/internal/devcluster"
	"slipway.dev/slipway/internal/devcluster/devtest"
)

// parentRef points at the dev Gateway, on the listener section when it is not "".
func parentRef(section string) gwv1.ParentReference {
	ref := gwv1.ParentReference{
		Group:     ptr.To(gwv1.Group(gwv1.GroupName)),
		Kind:      ptr.To(gwv1.Kind("Gateway")),
		Namespace: ptr.To(gwv1.Namespace(devcluster.GatewayNamespace)),
		Name:      devcluster.GatewayName,
	}
	if section != "" {
		ref.SectionName = ptr.To(gwv1.SectionName(section))
	}
	return ref
}

func backend(name string, port int32) []gwv1.BackendRef {
	return []gwv1.BackendRef{{BackendObjectReference: gwv1.BackendObjectReference{Name: gwv1.ObjectName(name), Port: ptr.To(gwv1.PortNumber(port))}}}
}

func httpRoute(ns, name, section string) *gwv1.HTTPRoute {
	return &gwv1.HTTPRoute{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: gwv1.HTTPRouteSpec{
			CommonRouteSpec: gwv1.CommonRouteSpec{ParentRefs: []gwv1.ParentReference{parentRef(section)}},
			Hostnames:       []gwv1.Hostname{gwv1.Hostname(name + ".dev.test")},
			Rules:           []gwv1.HTTPRouteRule{{BackendRefs: []gwv1.HTTPBackendRef{{BackendRef: backend(name, 80)[0]}}}},
		},
	}
}

func tlsRoute(ns, name, section string) *gwv1.TLSRoute {
	return &gwv1.TLSRoute{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: gwv1.TLSRouteSpec{
			CommonRouteSpec: gwv1.CommonRouteSpec{ParentRefs: []gwv1.ParentReference{parentRef(section)}},
			Hostnames:       []gwv1.Hostname{gwv1.Hostname(name + ".dev.test")},
			Rules:           []gwv1.TLSRouteRule{{BackendRefs: backend(name, 443)}},
		},
	}
}

// routeCondition reads a route's condition from the parent entry of the dev Gateway written by
// Envoy Gateway, counting it only at the route's current generation.
func routeCondition(gc gwclient.Interface, kind, ns, name, typ string) (status, reason string, err error) {
	var gen int64
	var parents []gwv1.RouteParentStatus
	switch kind {
	case "HTTPRoute":
		r, err := gc.GatewayV1().HTTPRoutes(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return "", "", err
		}
		gen, parents = r.Generation, r.Status.Parents
	case "TLSRoute":
		r, err := gc.GatewayV1().TLSRoutes(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return "", "", err
		}
		gen, parents = r.Generation, r.Status.Parents
	}
	for _, p := range parents {
		if string(p.ControllerName) != devcluster.EnvoyController || string(p.ParentRef.Name) != devcluster.GatewayName {
			continue
		}
		if c := metaCondition(p.Conditions, typ); c != nil && c.ObservedGeneration == gen {
			return string(c.Status), c.Reason, nil
		}
	}
	return "", "", nil
}

// waitRoute waits until the route's condition typ has status want, and returns its reason.
func waitRoute(t *testing.T, gc gwclient.Interface, kind, ns, name, typ, want string) string {
	t.Helper()
	var reason string
	devtest.WaitFor(t, 30*time.Second, fmt.Sprintf("%s %s/%s %s=%s", kind, ns, name, typ, want), func() (bool, string) {
		status, r, err := routeCondition(gc, kind, ns, name, typ)
		if err != nil {
			return false, err.Error()
		}
		reason = r
		return status == want, status + "/" + r
	})
	return reason
}

// An HTTPRoute and a TLSRoute to a Service are Accepted by the dev Gateway at once. Without a
// Ready pod behind the Service, Envoy Gateway says the TLSRoute's ResolvedRefs is False
// (EndpointsNotFound) but the HTTPRoute's already True (its envoy would answer 503); once a pod
// is Ready both are True.
func TestRoutesAcceptedThenResolved(t *testing.T) {
	_, c := client(t)
	gc := gatewayClient(t, c)
	ns := namespace(t, c, "routes")
	ctx := context.Background()
	service(t, c, ns, "web", corev1.ServiceTypeClusterIP, nil)
	start := time.Now()
	if _, err := gc.GatewayV1().HTTPRoutes(ns).Create(ctx, httpRoute(ns, "web", ""), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := gc.GatewayV1().TLSRoutes(ns).Create(ctx, tlsRoute(ns, "web", ""), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ kind, resolved string }{
		{"HTTPRoute", "True/ResolvedRefs"},
		{"TLSRoute", "False/EndpointsNotFound"},
	} {
		reason := waitRoute(t, gc, tc.kind, ns, "web", "Accepted", "True")
		status, why, err := routeCondition(gc, tc.kind, ns, "web", "ResolvedRefs")
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: Accepted=True/%s after %s; ResolvedRefs then %s/%s", tc.kind, reason, time.Since(start).Round(time.Millisecond), status, why)
		if got := status + "/" + why; got != tc.resolved {
			t.Errorf("%s without a ready pod: ResolvedRefs %s, want %s", tc.kind, got, tc.resolved)
		}
	}
	start = time.Now()
	if _, err := c.Clientset.AppsV1().Deployments(ns).Create(ctx, deployment(ns, "web", "", ""), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, kind := range []string{"HTTPRoute", "TLSRoute"} {
		reason := waitRoute(t, gc, kind, ns, "web", "ResolvedRefs", "True")
		t.Logf("%s: ResolvedRefs=True/%s %s after the Deployment was created", kind, reason, time.Since(start).Round(time.Millisecond))
	}
}

// A TLSRoute on the HTTP listener is not accepted: NotAllowedByListeners.
func TestTLSRouteOnHTTPListenerNotAllowed(t *testing.T) {
	_, c := client(t)
	gc := gatewayClient(t, c)
	ns := namespace(t, c, "tlshttp")
	service(t, c, ns, "web", corev1.ServiceTypeClusterIP, nil)
	start := time.Now()
	if _, err := gc.GatewayV1().TLSRoutes(ns).Create(context.Background(), tlsRoute(ns, "web", "http"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	reason := waitRoute(t, gc, "TLSRoute", ns, "web", "Accepted", "False")
	t.Logf("TLSRoute on listener http: Accepted=False/%s after %s", reason, time.Since(start).Round(time.Millisecond))
	if reason != string(gwv1.RouteReasonNotAllowedByListeners) {
		t.Errorf("reason %s, want %s", reason, gwv1.RouteReasonNotAllowedByListeners)
	}
}
