package e2e

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"

	"slipway.dev/slipway/internal/devcluster"
)

// devGateway is the dev environment's Gateway (Envoy Gateway, TLS/443 passthrough and HTTP/80
// from every namespace), the one `dev env` exports as K8S_GATEWAY.
const devGateway = "slipway-dev/public"

// publishAddressGroup is a published group (SPEC §7): www serves only 80 and 443 and so goes
// behind the Gateway; mail keeps its own load-balancer address. {{ZONE}} is the test's own
// domain under dev.test, {{TIMEOUT}} the addressTimeout, {{MAILANN}} mail's serviceAnnotations.
const publishAddressGroup = `group: {{GROUP}}
publish:
  zone: {{ZONE}}
  addressTimeout: {{TIMEOUT}}
  ttl: 60
  dns: {key: slipway-dev}
nodes:
  www:
    image: {rootfs: nodes/www/rootfs}
    init: none
    firewall: {served: [22, {{WWWPORTS}}], published: [{{WWWPORTS}}], admin: [22]}
    publishedNames: [www.{{ZONE}}, {{ZONE}}]
  mail:
    image: {rootfs: nodes/mail/rootfs}
    init: none
    firewall: {served: [25], published: [25]}
    publishedNames: [mail.{{ZONE}}]
    serviceAnnotations: {{MAILANN}}
`

// addressTest is a published group with its gateway (K8S_GATEWAY) and DNS server set.
type addressTest struct {
	*Group
	Zone string
	gw   gwclient.Interface
}

type addressFile struct {
	timeout  string
	wwwPorts string // www's published ports: "80, 443" puts it behind the Gateway
	mailAnn  string // mail's serviceAnnotations
}

func newAddressTest(t *testing.T, prefix, gateway string, f addressFile) *addressTest {
	t.Helper()
	g := NewGroup(t, prefix, publishAddressGroup, "www", "mail")
	gc, err := gwclient.NewForConfig(g.Kube.Config)
	if err != nil {
		t.Fatal(err)
	}
	a := &addressTest{Group: g, Zone: g.Name + "." + devcluster.DNSZone, gw: gc}
	g.WithEnv("K8S_GATEWAY="+gateway, "SLIPWAY_DNS_SERVER="+g.Env.DNSServer,
		"SLIPWAY_TSIG_SECRET_FILE="+g.Env.TSIGSecretFile, "SLIPWAY_TSIG_SECRET=")
	a.write(f)
	return a
}

func (a *addressTest) write(f addressFile) {
	if f.timeout == "" {
		f.timeout = "2m"
	}
	if f.wwwPorts == "" {
		f.wwwPorts = "80, 443"
	}
	if f.mailAnn == "" {
		f.mailAnn = "{}"
	}
	a.WriteFile("slipway.yaml", strings.NewReplacer("{{GROUP}}", a.Name, "{{ZONE}}", a.Zone, "{{TIMEOUT}}", f.timeout,
		"{{WWWPORTS}}", f.wwwPorts, "{{MAILANN}}", f.mailAnn).Replace(publishAddressGroup))
}

func (a *addressTest) service(name string) *corev1.Service {
	a.t.Helper()
	s, err := a.Kube.Clientset.CoreV1().Services(a.Name).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		a.t.Fatal(err)
	}
	return s
}

// deploymentExists reports whether the Deployment name was made (a node failed before its
// rollout has none).
func (a *addressTest) deploymentExists(name string) bool {
	a.t.Helper()
	_, err := a.Kube.Clientset.AppsV1().Deployments(a.Name).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		a.t.Fatal(err)
	}
	return err == nil
}

// Nodes behind the dev Gateway get a ClusterIP Service and routes with their names and the
// Gateway as parent; a node with its own address a LoadBalancer Service with an address;
// status shows both; a second plan has nothing to do; a node that moves away from the Gateway
// has its Service replaced and its routes removed.
func TestPublishGatewayRoutes(t *testing.T) {
	a := newAddressTest(t, "pubgw", devGateway, addressFile{})
	a.MustRun(0, "apply", "--yes")

	ctx := context.Background()
	if typ := a.service("www").Spec.Type; typ != corev1.ServiceTypeClusterIP {
		t.Errorf("service www: type %s, want ClusterIP", typ)
	}
	if typ := a.service("mail").Spec.Type; typ != corev1.ServiceTypeLoadBalancer {
		t.Errorf("service mail: type %s, want LoadBalancer", typ)
	}
	wantHosts := []gwv1.Hostname{gwv1.Hostname("www." + a.Zone), gwv1.Hostname(a.Zone)}
	wantParent := []gwv1.ParentReference{{Group: ptr.To(gwv1.Group(gwv1.GroupName)), Kind: ptr.To(gwv1.Kind("Gateway")),
		Namespace: ptr.To(gwv1.Namespace("slipway-dev")), Name: "public"}}
	tls, err := a.gw.GatewayV1().TLSRoutes(a.Name).Get(ctx, "www", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	http, err := a.gw.GatewayV1().HTTPRoutes(a.Name).Get(ctx, "www", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		what      string
		got, want any
	}{
		{"TLSRoute hostnames", tls.Spec.Hostnames, wantHosts},
		{"TLSRoute parentRefs", tls.Spec.ParentRefs, wantParent},
		{"TLSRoute backend", tls.Spec.Rules[0].BackendRefs[0].Name, gwv1.ObjectName("www")},
		{"HTTPRoute hostnames", http.Spec.Hostnames, wantHosts},
		{"HTTPRoute parentRefs", http.Spec.ParentRefs, wantParent},
	} {
		if d := cmp.Diff(c.want, c.got); d != "" {
			t.Errorf("%s (-want +got):\n%s", c.what, d)
		}
	}
	if _, err := a.gw.GatewayV1().TLSRoutes(a.Name).Get(ctx, "mail", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("TLSRoute mail: %v, want none (mail has its own address)", err)
	}

	gw, err := a.gw.GatewayV1().Gateways("slipway-dev").Get(ctx, "public", metav1.GetOptions{})
	if err != nil || len(gw.Status.Addresses) == 0 {
		t.Fatalf("gateway %s: no address: %v", devGateway, err)
	}
	var st struct {
		Nodes []struct {
			Node    string   `json:"node"`
			Names   []string `json:"names"`
			Address []string `json:"address"`
		} `json:"nodes"`
	}
	r := a.MustRun(0, "status", "-o", "json")
	if err := json.Unmarshal([]byte(r.Stdout), &st); err != nil {
		t.Fatalf("status -o json: %v\n%s", err, r)
	}
	addrs := map[string][]string{}
	for _, n := range st.Nodes {
		addrs[n.Node] = n.Address
	}
	mailIP := lbAddress(t, a.service("mail"))
	if d := cmp.Diff(map[string][]string{"www": {gw.Status.Addresses[0].Value}, "mail": {mailIP}}, addrs); d != "" {
		t.Errorf("status addresses (-want +got):\n%s", d)
	}
	a.MustRun(0, "plan", "--detailed-exitcode")

	// www moves away from the Gateway: its own address, its routes gone.
	a.write(addressFile{wwwPorts: "8443"})
	if r := a.MustRun(0, "apply", "--yes"); !strings.Contains(r.Stdout+r.Stderr, "Service www") {
		t.Logf("apply output:\n%s", r)
	}
	if s := a.service("www"); s.Spec.Type != corev1.ServiceTypeLoadBalancer || len(s.Status.LoadBalancer.Ingress) == 0 {
		t.Errorf("service www after the move: type %s, ingress %v; want LoadBalancer with an address", s.Spec.Type, s.Status.LoadBalancer.Ingress)
	}
	for _, kind := range []string{"TLSRoute", "HTTPRoute"} {
		var err error
		if kind == "TLSRoute" {
			_, err = a.gw.GatewayV1().TLSRoutes(a.Name).Get(ctx, "www", metav1.GetOptions{})
		} else {
			_, err = a.gw.GatewayV1().HTTPRoutes(a.Name).Get(ctx, "www", metav1.GetOptions{})
		}
		if !apierrors.IsNotFound(err) {
			t.Errorf("%s www after the move: %v, want it removed", kind, err)
		}
	}
	a.MustRun(0, "plan", "--detailed-exitcode")
}

// unservedClass is a GatewayClass no controller serves: the tests play its controller where
// they need one (a Gateway's address) and leave it silent otherwise.
const (
	unservedClass      = "slipway-e2e-unserved"
	unservedController = "slipway.dev/e2e-unserved"
)

// testGateway makes Gateway ns/name of the unserved class with listeners, and gives it the
// address 192.0.2.250 when addressed (as its controller would).
func (a *addressTest) testGateway(ns, name string, addressed bool, listeners ...gwv1.Listener) {
	a.t.Helper()
	ctx := context.Background()
	_, err := a.gw.GatewayV1().GatewayClasses().Create(ctx, &gwv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: unservedClass},
		Spec: gwv1.GatewayClassSpec{ControllerName: unservedController}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		a.t.Fatal(err)
	}
	_, err = a.Kube.Clientset.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		a.t.Fatal(err)
	}
	a.t.Cleanup(func() {
		_ = a.Kube.Clientset.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{})
	})
	gw, err := a.gw.GatewayV1().Gateways(ns).Create(ctx, &gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: gwv1.GatewaySpec{GatewayClassName: unservedClass, Listeners: listeners}}, metav1.CreateOptions{})
	if err != nil {
		a.t.Fatal(err)
	}
	if addressed {
		gw.Status.Addresses = []gwv1.GatewayStatusAddress{{Type: ptr.To(gwv1.IPAddressType), Value: "192.0.2.250"}}
		if _, err := a.gw.GatewayV1().Gateways(ns).UpdateStatus(ctx, gw, metav1.UpdateOptions{}); err != nil {
			a.t.Fatal(err)
		}
	}
}

func tlsListener(mode gwv1.TLSModeType, from gwv1.FromNamespaces) gwv1.Listener {
	l := gwv1.Listener{Name: "tls", Protocol: gwv1.TLSProtocolType, Port: 443, TLS: &gwv1.ListenerTLSConfig{Mode: &mode},
		AllowedRoutes: &gwv1.AllowedRoutes{Namespaces: &gwv1.RouteNamespaces{From: &from}}}
	if mode == gwv1.TLSModeTerminate {
		// The API requires a certificate to terminate with; none needs to exist for plan.
		l.TLS.CertificateRefs = []gwv1.SecretObjectReference{{Name: "edge-cert"}}
	}
	return l
}

var httpListener = gwv1.Listener{Name: "http", Protocol: gwv1.HTTPProtocolType, Port: 80,
	AllowedRoutes: &gwv1.AllowedRoutes{Namespaces: &gwv1.RouteNamespaces{From: ptr.To(gwv1.NamespacesFromAll)}}}

// Plan fails, naming the Gateway and what is missing, for each piece a Gateway lacks; nothing
// is made in the cluster.
func TestPublishPlanGatewayChecks(t *testing.T) {
	all, same := gwv1.NamespacesFromAll, gwv1.NamespacesFromSame
	tests := []struct {
		name      string
		addressed bool
		listeners []gwv1.Listener
		missing   bool // no Gateway at all
		want      string
	}{
		{"no gateway", false, nil, true, "does not exist"},
		{"no address", false, []gwv1.Listener{tlsListener(gwv1.TLSModePassthrough, all), httpListener}, false,
			"has no address (status.addresses is empty: is its controller running?)"},
		{"no TLS passthrough listener", true, []gwv1.Listener{tlsListener(gwv1.TLSModeTerminate, all), httpListener}, false,
			"has no listener TLS/443/Passthrough"},
		{"no HTTP listener", true, []gwv1.Listener{tlsListener(gwv1.TLSModePassthrough, all)}, false,
			"has no listener HTTP/80"},
		{"namespace not admitted", true, []gwv1.Listener{tlsListener(gwv1.TLSModePassthrough, same), httpListener}, false,
			"listener tls (TLS/443/Passthrough) does not admit routes of namespace "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			a := newAddressTest(t, "pubchk", "", addressFile{})
			gwNS := a.Name + "-gw"
			a.WithEnv("K8S_GATEWAY=" + gwNS + "/edge")
			if !tt.missing {
				a.testGateway(gwNS, "edge", tt.addressed, tt.listeners...)
			}
			r := a.MustRun(1, "plan")
			want := "gateway " + gwNS + "/edge (K8S_GATEWAY): " + tt.want
			if !strings.Contains(r.Stderr, want) {
				t.Errorf("plan: want %q in its error, got %s", want, r)
			}
			if a.NamespaceExists() {
				t.Errorf("namespace %s exists after a failed plan", a.Name)
			}
		})
	}
}

// A controller that never answers fails the apply at addressTimeout, before the node's
// rollout; the node with its own address is rolled out. (A route the real controller rejects:
// TestPublishRouteRejectedByController.)
func TestPublishRouteNotAccepted(t *testing.T) {
	// 30s: mail's load balancer answers within it even on a busy machine.
	a := newAddressTest(t, "pubrt", "", addressFile{timeout: "30s"})
	gwNS := a.Name + "-gw"
	a.WithEnv("K8S_GATEWAY=" + gwNS + "/edge")
	a.testGateway(gwNS, "edge", true, tlsListener(gwv1.TLSModePassthrough, gwv1.NamespacesFromAll), httpListener)
	start := time.Now()
	r := a.MustRun(1, "apply", "--yes")
	want := "TLSRoute " + a.Name + "/www: not Accepted by gateway " + gwNS + "/edge within 30s: no status from its controller " + unservedController
	if !strings.Contains(r.Stderr, want) {
		t.Errorf("apply: want %q in its error, got %s", want, r)
	}
	if time.Since(start) < 30*time.Second {
		t.Errorf("apply failed after %s, before addressTimeout 30s", time.Since(start))
	}
	if a.deploymentExists("www") {
		t.Error("deployment www exists: the node was rolled out with routes not accepted")
	}
	if !a.deploymentExists("mail") {
		t.Errorf("deployment mail does not exist: the node with its own address should be rolled out\n%s", r)
	}
}

// A LoadBalancer Service that gets no address within addressTimeout (it asks for a MetalLB
// pool that does not exist) fails its node before the rollout, naming the Service; the node
// behind the Gateway is rolled out.
func TestPublishLoadBalancerNoAddress(t *testing.T) {
	a := newAddressTest(t, "publb", devGateway, addressFile{timeout: "20s",
		mailAnn: "{metallb.universe.tf/address-pool: slipway-e2e-no-such-pool}"})
	r := a.MustRun(1, "apply", "--yes")
	want := "service " + a.Name + "/mail: no load-balancer address within 20s (status.loadBalancer.ingress is empty): not rolled out"
	if !strings.Contains(r.Stderr, want) {
		t.Errorf("apply: want %q in its error, got %s", want, r)
	}
	if a.deploymentExists("mail") {
		t.Error("deployment mail exists: the node was rolled out without an address")
	}
	if !a.deploymentExists("www") {
		t.Error("deployment www does not exist: the node behind the Gateway should be rolled out")
	}
	if lines := strings.Split(strings.TrimSpace(r.Stderr), "\n"); slices.ContainsFunc(lines, func(l string) bool {
		return strings.Contains(l, "node www:") && strings.Contains(l, "failed")
	}) {
		t.Errorf("node www failed too:\n%s", r.Stderr)
	}
}
