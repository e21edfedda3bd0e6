package devcluster_test

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"

	"slipway.dev/slipway/internal/devcluster"
	"slipway.dev/slipway/internal/devcluster/devtest"
	"slipway.dev/slipway/internal/kube"
)

// lbLimit bounds MetalLB's answer: seconds on a cluster where it started first; a controller
// started beside a thousand LoadBalancer Services in churn takes much longer (see publish.md).
const lbLimit = 3 * time.Minute

var (
	devPool      = netip.MustParsePrefix(devcluster.MetalLBRange)
	overflowPool = netip.MustParsePrefix(devcluster.MetalLBOverflow)
	reservedPool = netip.MustParsePrefix(devcluster.MetalLBReserved)
)

func gatewayClient(t *testing.T, c *kube.Client) gwclient.Interface {
	t.Helper()
	gc, err := gwclient.NewForConfig(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	return gc
}

// service makes a Service of type typ in ns selecting app=name, on ports 80 and 443.
func service(t *testing.T, c *kube.Client, ns, name string, typ corev1.ServiceType, annotations map[string]string) {
	t.Helper()
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Annotations: annotations},
		Spec: corev1.ServiceSpec{
			Type:     typ,
			Selector: map[string]string{"app": name},
			Ports: []corev1.ServicePort{
				{Name: "http", Port: 80, TargetPort: intstr.FromInt32(80)},
				{Name: "https", Port: 443, TargetPort: intstr.FromInt32(443)},
			},
		},
	}
	if _, err := c.Clientset.CoreV1().Services(ns).Create(context.Background(), svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Deleted now rather than with the namespace, so a pinned address is free for the next run.
	t.Cleanup(func() {
		_ = c.Clientset.CoreV1().Services(ns).Delete(context.Background(), name, metav1.DeleteOptions{})
	})
}

// ingress returns the Service's load-balancer IPs.
func ingress(t *testing.T, c *kube.Client, ns, name string) []string {
	t.Helper()
	svc, err := c.Clientset.CoreV1().Services(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var ips []string
	for _, in := range svc.Status.LoadBalancer.Ingress {
		ips = append(ips, in.IP)
	}
	return ips
}

// MetalLB gives a LoadBalancer Service an address from the dev pool within seconds (from the
// overflow pool once the cluster holds more than 256 of them, as it does beside a 1000-node
// benchmark), and the one `metallb.universe.tf/loadBalancerIPs` asks for.
func TestLoadBalancerAddress(t *testing.T) {
	_, c := client(t)
	ns := namespace(t, c, "lb")
	// A pinned address of its own per run: MetalLB frees an address some time after its
	// Service goes, so an earlier run's may still be held.
	pinned := fmt.Sprintf("203.0.113.%d", 2+time.Now().UnixNano()%253)
	for _, tc := range []struct {
		name        string
		annotations map[string]string
		want        string // "" = any address of the pool
	}{
		{name: "any"},
		{name: "pinned", annotations: map[string]string{"metallb.universe.tf/loadBalancerIPs": pinned}, want: pinned},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			service(t, c, ns, tc.name, corev1.ServiceTypeLoadBalancer, tc.annotations)
			var got []string
			devtest.WaitFor(t, lbLimit, "Service "+ns+"/"+tc.name+" gets a load-balancer address", func() (bool, string) {
				got = ingress(t, c, ns, tc.name)
				return len(got) > 0, fmt.Sprint(got)
			})
			t.Logf("Service %s/%s: address %v after %s", ns, tc.name, got, time.Since(start).Round(time.Millisecond))
			ip, err := netip.ParseAddr(got[0])
			if err != nil || len(got) != 1 {
				t.Fatalf("addresses %v, want one", got)
			}
			if tc.want != "" && got[0] != tc.want {
				t.Errorf("address %s, want the pinned %s", got[0], tc.want)
			}
			if tc.want == "" && !devPool.Contains(ip) && !overflowPool.Contains(ip) {
				t.Errorf("address %s, want one in %s (or %s when that is full)", ip, devPool, overflowPool)
			}
			if strings.HasSuffix(got[0], ".0") || strings.HasSuffix(got[0], ".255") {
				t.Errorf("address %s ends in .0 or .255 (avoidBuggyIPs)", ip)
			}
			if tc.want == "" && reservedPool.Contains(ip) {
				t.Errorf("address %s from the reserved pool %s, which is handed out only on request", ip, reservedPool)
			}
		})
	}
}

// A Service that asks for a pool that does not exist gets no address: MetalLB says so in an
// AllocationFailed event, and the Service stays without one.
func TestLoadBalancerUnknownPoolGetsNone(t *testing.T) {
	_, c := client(t)
	ns := namespace(t, c, "lbnone")
	start := time.Now()
	service(t, c, ns, "nopool", corev1.ServiceTypeLoadBalancer, map[string]string{"metallb.universe.tf/address-pool": "no-such-pool"})
	reason := allocationFailed(t, c, ns, "nopool")
	t.Logf("Service %s/nopool: %q after %s", ns, reason, time.Since(start).Round(time.Millisecond))
	if !strings.Contains(reason, "no-such-pool") {
		t.Errorf("event %q does not name the pool no-such-pool", reason)
	}
	if got := ingress(t, c, ns, "nopool"); len(got) != 0 {
		t.Errorf("Service with an unknown pool got addresses %v, want none", got)
	}
}

// No pool hands out an address ending in .0 or .255 (avoidBuggyIPs): not even on request,
// so 192.0.2.0, the dev range's network address, is nobody's.
func TestLoadBalancerAvoidsBuggyAddresses(t *testing.T) {
	_, c := client(t)
	ns := namespace(t, c, "lbbuggy")
	for i, ip := range []string{"192.0.2.0", "192.0.2.255", "198.18.1.0", "203.0.113.255"} {
		t.Run(ip, func(t *testing.T) {
			t.Parallel()
			name := fmt.Sprintf("buggy%d", i)
			service(t, c, ns, name, corev1.ServiceTypeLoadBalancer, map[string]string{"metallb.universe.tf/loadBalancerIPs": ip})
			var reason string
			var got []string
			devtest.WaitFor(t, lbLimit, "MetalLB's answer to Service "+ns+"/"+name, func() (bool, string) {
				reason, got = allocationEvent(t, c, ns, name), ingress(t, c, ns, name)
				return reason != "" || len(got) > 0, reason
			})
			if len(got) != 0 {
				t.Fatalf("Service %s asking for %s got addresses %v, want none", name, ip, got)
			}
			// Refused as outside every pool, not as in use by another Service.
			if !strings.Contains(reason, "is not allowed in config") {
				t.Errorf("Service %s asking for %s: event %q, want it not allowed by the pools", name, ip, reason)
			}
		})
	}
}

// allocationFailed waits for MetalLB's AllocationFailed event on Service ns/name and returns
// its reason and message.
func allocationFailed(t *testing.T, c *kube.Client, ns, name string) string {
	t.Helper()
	var reason string
	devtest.WaitFor(t, lbLimit, "MetalLB's event on Service "+ns+"/"+name, func() (bool, string) {
		reason = allocationEvent(t, c, ns, name)
		return reason != "", reason
	})
	return reason
}

// allocationEvent is the reason and message of MetalLB's AllocationFailed event on Service
// ns/name, "" while there is none.
func allocationEvent(t *testing.T, c *kube.Client, ns, name string) string {
	t.Helper()
	evs, err := c.Clientset.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{FieldSelector: "involvedObject.name=" + name})
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs.Items {
		if ev.Reason == "AllocationFailed" {
			return ev.Reason + ": " + ev.Message
		}
	}
	return ""
}

// The dev cluster's Gateway is Programmed with an address from the pool, has the listeners
// SPEC §10 names, and `dev env` exports it.
func TestGatewayProgrammed(t *testing.T) {
	env, c := client(t)
	gw, err := gatewayClient(t, c).GatewayV1().Gateways(devcluster.GatewayNamespace).Get(context.Background(), devcluster.GatewayName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cond := metaCondition(gw.Status.Conditions, string(gwv1.GatewayConditionProgrammed))
	if cond == nil || cond.Status != metav1.ConditionTrue || cond.ObservedGeneration != gw.Generation {
		t.Errorf("Gateway %s: Programmed = %+v, want True at generation %d", devcluster.Gateway, cond, gw.Generation)
	}
	if len(gw.Status.Addresses) == 0 {
		t.Fatalf("Gateway %s has no address", devcluster.Gateway)
	}
	if got := gw.Status.Addresses[0].Value; got != devcluster.GatewayAddress {
		t.Errorf("Gateway address %q, want %s (MetalLB's reserved pool)", got, devcluster.GatewayAddress)
	}
	var listeners []string
	for _, l := range gw.Spec.Listeners {
		s := fmt.Sprintf("%s/%s/%d", l.Name, l.Protocol, l.Port)
		if l.TLS != nil && l.TLS.Mode != nil {
			s += "/" + string(*l.TLS.Mode)
		}
		if l.AllowedRoutes != nil && l.AllowedRoutes.Namespaces != nil && l.AllowedRoutes.Namespaces.From != nil {
			s += " from " + string(*l.AllowedRoutes.Namespaces.From)
		}
		listeners = append(listeners, s)
	}
	if got, want := strings.Join(listeners, ", "), "tls/TLS/443/Passthrough from All, http/HTTP/80 from All"; got != want {
		t.Errorf("listeners %q, want %q", got, want)
	}
	if !strings.Contains(env.Exports(), "export K8S_GATEWAY="+devcluster.Gateway+"\n") {
		t.Errorf("Exports() = %q, want a K8S_GATEWAY=%s line", env.Exports(), devcluster.Gateway)
	}
}

func metaCondition(conds []metav1.Condition, typ string) *metav1.Condition {
	for i := range conds {
		if conds[i].Type == typ {
			return &conds[i]
		}
	}
	return nil
}
