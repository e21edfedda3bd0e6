package publish

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"slipway.dev/slipway/internal/spec"
)

// The plan-time checks of the Gateway (SPEC §7), each naming the Gateway and what is missing.
func TestCheckGateway(t *testing.T) {
	ref := spec.GatewayRef{Namespace: "infra", Name: "public", From: "slipway.yaml:3"}
	from := func(f gwv1.FromNamespaces) *gwv1.AllowedRoutes {
		return &gwv1.AllowedRoutes{Namespaces: &gwv1.RouteNamespaces{From: &f}}
	}
	tlsL := func(name string, mode gwv1.TLSModeType, ar *gwv1.AllowedRoutes) gwv1.Listener {
		return gwv1.Listener{Name: gwv1.SectionName(name), Protocol: gwv1.TLSProtocolType, Port: 443,
			TLS: &gwv1.ListenerTLSConfig{Mode: &mode}, AllowedRoutes: ar}
	}
	httpL := gwv1.Listener{Name: "http", Protocol: gwv1.HTTPProtocolType, Port: 80, AllowedRoutes: from(gwv1.NamespacesFromAll)}
	gateway := func(listeners ...gwv1.Listener) *gwv1.Gateway {
		return &gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "infra", Name: "public"},
			Spec:   gwv1.GatewaySpec{GatewayClassName: "eg", Listeners: listeners},
			Status: gwv1.GatewayStatus{Addresses: []gwv1.GatewayStatusAddress{{Value: "192.0.2.1"}}}}
	}
	good := tlsL("tls", gwv1.TLSModePassthrough, from(gwv1.NamespacesFromAll))
	class := &gwv1.GatewayClass{Spec: gwv1.GatewayClassSpec{ControllerName: "example.org/gw"}}
	web := &spec.Node{Name: "web", PublishedNames: []string{"www.example.org", "example.org"},
		Firewall: spec.Firewall{Published: []spec.Port{{Protocol: spec.TCP, Number: 80}, {Protocol: spec.TCP, Number: 443}}}}
	api := &spec.Node{Name: "api", PublishedNames: []string{"api.example.org"},
		Firewall: spec.Firewall{Published: []spec.Port{{Protocol: spec.TCP, Number: 443}}}}
	const prefix = "gateway infra/public (slipway.yaml:3): "
	tests := []struct {
		name  string
		gw    *gwv1.Gateway
		class *gwv1.GatewayClass
		nodes []*spec.Node
		want  string // "" no error; else the message after the prefix
	}{
		{"complete", gateway(good, httpL), class, []*spec.Node{web, api}, ""},
		{"443 only needs no HTTP listener", gateway(good), class, []*spec.Node{api}, ""},
		{"does not exist", nil, nil, []*spec.Node{web}, "does not exist (or the cluster does not serve the Gateway API)"},
		{"no class, no address", func() *gwv1.Gateway { g := gateway(good, httpL); g.Status.Addresses = nil; return g }(), nil, []*spec.Node{web},
			"its GatewayClass eg does not exist; has no address (status.addresses is empty: is its controller running?)"},
		{"no TLS listener", gateway(httpL), class, []*spec.Node{web}, "has no listener TLS/443/Passthrough (for the TLSRoutes of nodes behind it)"},
		{"TLS that terminates", gateway(tlsL("tls", gwv1.TLSModeTerminate, nil), httpL), class, []*spec.Node{web}, "has no listener TLS/443/Passthrough (for the TLSRoutes of nodes behind it)"},
		{"no HTTP listener", gateway(good), class, []*spec.Node{web}, "has no listener HTTP/80 (for the HTTPRoutes of nodes behind it)"},
		{"namespace not admitted (Same)", gateway(tlsL("tls", gwv1.TLSModePassthrough, nil), httpL), class, []*spec.Node{web},
			"listener tls (TLS/443/Passthrough) does not admit routes of namespace demo (allowedRoutes.namespaces.from: Same, the Gateway's namespace infra only)"},
		{"namespace not admitted (selector)", gateway(tlsL("tls", gwv1.TLSModePassthrough, &gwv1.AllowedRoutes{Namespaces: &gwv1.RouteNamespaces{
			From: ptr.To(gwv1.NamespacesFromSelector), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"gateway": "public"}}}}), httpL), class, []*spec.Node{web},
			"listener tls (TLS/443/Passthrough) does not admit routes of namespace demo (allowedRoutes.namespaces.selector gateway=public does not match its labels)"},
		{"namespace admitted by its labels", gateway(tlsL("tls", gwv1.TLSModePassthrough, &gwv1.AllowedRoutes{Namespaces: &gwv1.RouteNamespaces{
			From: ptr.To(gwv1.NamespacesFromSelector), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{spec.LabelGroup: "demo"}}}}), httpL), class, []*spec.Node{web}, ""},
		{"kind not admitted", gateway(tlsL("tls", gwv1.TLSModePassthrough, &gwv1.AllowedRoutes{Kinds: []gwv1.RouteGroupKind{{Kind: "TCPRoute"}}}), httpL), class, []*spec.Node{web},
			"listener tls (TLS/443/Passthrough) does not admit TLSRoutes (allowedRoutes.kinds)"},
		{"hostnames that do not intersect", gateway(func() gwv1.Listener {
			l := good
			l.Hostname = ptr.To(gwv1.Hostname("*.example.org"))
			return l
		}(), httpL), class, []*spec.Node{web, api},
			"node web: name example.org matches the hostname of no listener TLS/443/Passthrough (tls: *.example.org)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkGateway(ref, tt.gw, tt.class, "demo", map[string]string{"kubernetes.io/metadata.name": "demo", spec.LabelGroup: "demo"}, tt.nodes)
			got := ""
			if err != nil {
				got = err.Error()
			}
			want := tt.want
			if want != "" {
				want = prefix + want
			}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("checkGateway (-want +got):\n%s", d)
			}
		})
	}
}

func TestHostIntersects(t *testing.T) {
	for _, tt := range []struct {
		listener, name string
		want           bool
	}{
		{"", "www.example.org", true},
		{"www.example.org", "www.example.org", true},
		{"*.example.org", "www.example.org", true},
		{"*.example.org", "a.b.example.org", true},
		{"*.example.org", "example.org", false},
		{"www.example.org", "*.example.org", true},
		{"www.example.com", "www.example.org", false},
	} {
		var l *gwv1.Hostname
		if tt.listener != "" {
			l = ptr.To(gwv1.Hostname(tt.listener))
		}
		if got := hostIntersects(l, tt.name); got != tt.want {
			t.Errorf("hostIntersects(%q, %q) = %v, want %v", tt.listener, tt.name, got, tt.want)
		}
	}
}
