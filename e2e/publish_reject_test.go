package e2e

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/url"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"slipway.dev/slipway/internal/devcluster"
	"slipway.dev/slipway/internal/devcluster/devtest"
)

// envoyClass is a GatewayClass the dev environment's Envoy Gateway serves, without the dev
// class's pinned address: each test Gateway of it gets an address of its own from MetalLB.
const envoyClass = "slipway-e2e-envoy"

// lbAddress is the load-balancer address of svc; the dev pools never hand out an address
// ending in .0 (MetalLB's avoidBuggyIPs), 192.0.2.0 being the network's.
func lbAddress(t *testing.T, svc *corev1.Service) string {
	t.Helper()
	if len(svc.Status.LoadBalancer.Ingress) == 0 {
		t.Fatalf("service %s/%s: no load-balancer address", svc.Namespace, svc.Name)
	}
	ip := svc.Status.LoadBalancer.Ingress[0].IP
	if strings.HasSuffix(ip, ".0") {
		t.Errorf("service %s/%s: address %s ends in .0", svc.Namespace, svc.Name, ip)
	}
	return ip
}

// envoyGateway makes Gateway ns/name of envoyClass with listeners and waits until Envoy
// Gateway gives it an address (its envoy Service's, from MetalLB).
func (a *addressTest) envoyGateway(ns, name string, listeners ...gwv1.Listener) {
	a.t.Helper()
	ctx := context.Background()
	_, err := a.gw.GatewayV1().GatewayClasses().Create(ctx, &gwv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: envoyClass},
		Spec: gwv1.GatewayClassSpec{ControllerName: devcluster.EnvoyController}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		a.t.Fatal(err)
	}
	_, err = a.Kube.Clientset.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if err != nil {
		a.t.Fatal(err)
	}
	a.t.Cleanup(func() {
		_ = a.Kube.Clientset.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{})
	})
	_, err = a.gw.GatewayV1().Gateways(ns).Create(ctx, &gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: gwv1.GatewaySpec{GatewayClassName: envoyClass, Listeners: listeners}}, metav1.CreateOptions{})
	if err != nil {
		a.t.Fatal(err)
	}
	var addr string
	devtest.WaitFor(a.t, 3*time.Minute, "gateway "+ns+"/"+name+" gets an address from Envoy Gateway", func() (bool, string) {
		gw, err := a.gw.GatewayV1().Gateways(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		if len(gw.Status.Addresses) > 0 {
			addr = gw.Status.Addresses[0].Value
		}
		return addr != "", fmtConditions(gw.Status.Conditions)
	})
	if strings.HasSuffix(addr, ".0") {
		a.t.Errorf("gateway %s/%s: address %s ends in .0", ns, name, addr)
	}
}

// observed waits until Envoy Gateway has taken in the current generation of Gateway ns/name.
func (a *addressTest) observed(ns, name string) {
	a.t.Helper()
	devtest.WaitFor(a.t, time.Minute, "Envoy Gateway takes in the change of gateway "+ns+"/"+name, func() (bool, string) {
		gw, err := a.gw.GatewayV1().Gateways(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		c := meta.FindStatusCondition(gw.Status.Conditions, string(gwv1.GatewayConditionAccepted))
		return c != nil && c.ObservedGeneration == gw.Generation, fmtConditions(gw.Status.Conditions)
	})
}

func fmtConditions(cs []metav1.Condition) string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Type+"="+string(c.Status)+" ("+c.Reason+")")
	}
	return strings.Join(out, ", ")
}

// writeGate is a transport that holds every write (a push) until Open, and says when the
// first one comes: a test changes the cluster after apply's plan and before its objects.
type writeGate struct {
	first, open chan struct{}
	once        sync.Once
}

func newWriteGate() *writeGate {
	return &writeGate{first: make(chan struct{}), open: make(chan struct{})}
}

func (g *writeGate) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		g.once.Do(func() { close(g.first) })
		select {
		case <-g.open:
		case <-r.Context().Done():
			return nil, r.Context().Err()
		}
	}
	return http.DefaultTransport.RoundTrip(r)
}

// A route the real Gateway controller rejects fails the apply with the controller's reason,
// before the node's rollout; the node with its own address is rolled out. The Gateway (of
// Envoy Gateway) admits the namespace when apply plans, so plan's checks pass; while apply
// pushes the images, before it makes anything in the cluster, its TLS listener stops
// admitting other namespaces, and Envoy Gateway answers the TLSRoute with
// NotAllowedByListeners.
func TestPublishRouteRejectedByController(t *testing.T) {
	a := newAddressTest(t, "pubrej", "", addressFile{timeout: "2m"})
	gwNS := a.Name + "-gw"
	a.WithEnv("K8S_GATEWAY=" + gwNS + "/edge")
	a.envoyGateway(gwNS, "edge", tlsListener(gwv1.TLSModePassthrough, gwv1.NamespacesFromAll), httpListener)

	gate := newWriteGate()
	reg, err := devtest.NewProxy(&url.URL{Scheme: "http", Host: a.Env.Registry}, gate)
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close()
	a.WithEnv("K8S_REGISTRY=" + reg.Host())
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := a.Command(ctx, "apply", "--yes")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-gate.first:
	case err := <-done:
		t.Fatalf("apply ended before it pushed (%v):\nstdout:\n%s\nstderr:\n%s", err, &stdout, &stderr)
	case <-ctx.Done():
		t.Fatal("apply pushed nothing within 5m")
	}

	gw, err := a.gw.GatewayV1().Gateways(gwNS).Get(ctx, "edge", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range gw.Spec.Listeners {
		if l.Name == "tls" {
			gw.Spec.Listeners[i].AllowedRoutes.Namespaces.From = ptr.To(gwv1.NamespacesFromSame)
		}
	}
	if _, err := a.gw.GatewayV1().Gateways(gwNS).Update(ctx, gw, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	a.observed(gwNS, "edge")
	close(gate.open)

	err = <-done
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("apply: %v, want exit 1\nstdout:\n%s\nstderr:\n%s", err, &stdout, &stderr)
	}
	want := "TLSRoute " + a.Name + "/www: not Accepted by gateway " + gwNS + "/edge: Accepted is False (NotAllowedByListeners: "
	if !strings.Contains(stderr.String(), want) {
		t.Errorf("apply: want %q in its error, got\n%s", want, &stderr)
	}
	route, err := a.gw.GatewayV1().TLSRoutes(a.Name).Get(ctx, "www", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(route.Status.Parents) != 1 || string(route.Status.Parents[0].ControllerName) != devcluster.EnvoyController {
		t.Errorf("TLSRoute www: parents %+v, want one entry by %s", route.Status.Parents, devcluster.EnvoyController)
	}
	if a.deploymentExists("www") {
		t.Error("deployment www exists: the node was rolled out with its route rejected")
	}
	if !a.deploymentExists("mail") {
		t.Errorf("deployment mail does not exist: the node with its own address should be rolled out\n%s", &stderr)
	}
	lbAddress(t, a.service("mail"))
}
