package publish

import (
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"slipway.dev/slipway/internal/engine/lane"
	"slipway.dev/slipway/internal/spec"
)

// gatewayListener is a listener a kind of route needs on the Gateway (SPEC §7).
type gatewayListener struct {
	kind     string // the route kind: TLSRoute or HTTPRoute
	protocol gwv1.ProtocolType
	port     gwv1.PortNumber
	mode     gwv1.TLSModeType // "" for HTTP
}

func (l gatewayListener) String() string {
	s := fmt.Sprintf("%s/%d", l.protocol, l.port)
	if l.mode != "" {
		s += "/" + string(l.mode)
	}
	return s
}

var (
	tlsListener  = gatewayListener{kind: "TLSRoute", protocol: gwv1.TLSProtocolType, port: 443, mode: gwv1.TLSModePassthrough}
	httpListener = gatewayListener{kind: "HTTPRoute", protocol: gwv1.HTTPProtocolType, port: 80}
)

// checkGateway says what the Gateway lacks for the nodes behind it (SPEC §7): it exists, its
// class exists, it has an address, it has a listener TLS/443/Passthrough (and HTTP/80 when a
// node publishes 80) whose allowedRoutes admit the namespace (nsLabels: the namespace's labels
// as apply leaves them) and whose hostname takes each of the node's names. nil: nothing.
func checkGateway(ref spec.GatewayRef, gw *gwv1.Gateway, class *gwv1.GatewayClass, ns string, nsLabels map[string]string, nodes []*spec.Node) error {
	fail := func(problems ...string) error {
		return &lane.PreflightError{Msg: fmt.Sprintf("gateway %s (%s): %s", ref, ref.From, strings.Join(problems, "; "))}
	}
	if gw == nil {
		return fail("does not exist (or the cluster does not serve the Gateway API)")
	}
	var problems []string
	if class == nil {
		problems = append(problems, fmt.Sprintf("its GatewayClass %s does not exist", gw.Spec.GatewayClassName))
	}
	if len(gw.Status.Addresses) == 0 {
		problems = append(problems, "has no address (status.addresses is empty: is its controller running?)")
	}
	needs := []gatewayListener{tlsListener}
	if slices.ContainsFunc(nodes, func(n *spec.Node) bool { return publishesPort(n, 80) }) {
		needs = append(needs, httpListener)
	}
	for _, need := range needs {
		problems = append(problems, listenerProblems(need, gw, ns, nsLabels, nodes)...)
	}
	if len(problems) > 0 {
		return fail(problems...)
	}
	return nil
}

// listenerProblems checks the listeners of kind need for the nodes that use them.
func listenerProblems(need gatewayListener, gw *gwv1.Gateway, ns string, nsLabels map[string]string, nodes []*spec.Node) []string {
	var matching, admitting []gwv1.Listener
	var refused []string
	for _, l := range gw.Spec.Listeners {
		if l.Protocol != need.protocol || l.Port != need.port || (need.mode != "" && tlsMode(l) != need.mode) {
			continue
		}
		matching = append(matching, l)
		if why := admits(l, need.kind, gw.Namespace, ns, nsLabels); why != "" {
			refused = append(refused, fmt.Sprintf("listener %s (%s) %s", l.Name, need, why))
			continue
		}
		admitting = append(admitting, l)
	}
	switch {
	case len(matching) == 0:
		return []string{fmt.Sprintf("has no listener %s (for the %ss of nodes behind it)", need, need.kind)}
	case len(admitting) == 0:
		return refused
	}
	var out []string
	for _, n := range nodes {
		if need.kind == httpListener.kind && !publishesPort(n, 80) {
			continue
		}
		for _, name := range n.PublishedNames {
			if !slices.ContainsFunc(admitting, func(l gwv1.Listener) bool { return hostIntersects(l.Hostname, name) }) {
				out = append(out, fmt.Sprintf("node %s: name %s matches the hostname of no listener %s (%s)", n.Name, name, need, listenerHosts(admitting)))
			}
		}
	}
	return out
}

func tlsMode(l gwv1.Listener) gwv1.TLSModeType {
	if l.TLS == nil || l.TLS.Mode == nil {
		return gwv1.TLSModeTerminate // the API's default
	}
	return *l.TLS.Mode
}

// admits says why listener l does not take routes of kind from namespace ns ("" when it does).
func admits(l gwv1.Listener, kind, gwNamespace, ns string, nsLabels map[string]string) string {
	from := gwv1.NamespacesFromSame
	var sel *metav1.LabelSelector
	if ar := l.AllowedRoutes; ar != nil {
		if len(ar.Kinds) > 0 && !slices.ContainsFunc(ar.Kinds, func(k gwv1.RouteGroupKind) bool {
			return string(k.Kind) == kind && (k.Group == nil || string(*k.Group) == gwv1.GroupName)
		}) {
			return "does not admit " + kind + "s (allowedRoutes.kinds)"
		}
		if ar.Namespaces != nil {
			if ar.Namespaces.From != nil {
				from = *ar.Namespaces.From
			}
			sel = ar.Namespaces.Selector
		}
	}
	switch from {
	case gwv1.NamespacesFromAll:
		return ""
	case gwv1.NamespacesFromSame:
		if ns == gwNamespace {
			return ""
		}
		return fmt.Sprintf("does not admit routes of namespace %s (allowedRoutes.namespaces.from: Same, the Gateway's namespace %s only)", ns, gwNamespace)
	case gwv1.NamespacesFromSelector:
		s, err := metav1.LabelSelectorAsSelector(sel)
		if err == nil && sel != nil && s.Matches(labels.Set(nsLabels)) {
			return ""
		}
		return fmt.Sprintf("does not admit routes of namespace %s (allowedRoutes.namespaces.selector %s does not match its labels)", ns, metav1.FormatLabelSelector(sel))
	}
	return fmt.Sprintf("does not admit routes of namespace %s (allowedRoutes.namespaces.from: %s)", ns, from)
}

// hostIntersects reports whether a listener's hostname (nil: any) takes the route hostname
// name, wildcards on either side as the Gateway API matches them.
func hostIntersects(listener *gwv1.Hostname, name string) bool {
	if listener == nil || *listener == "" {
		return true
	}
	h := string(*listener)
	switch {
	case h == name:
		return true
	case strings.HasPrefix(h, "*."):
		if strings.HasSuffix(name, h[1:]) {
			return true
		}
	}
	return strings.HasPrefix(name, "*.") && strings.HasSuffix(h, name[1:])
}

func listenerHosts(ls []gwv1.Listener) string {
	var hs []string
	for _, l := range ls {
		if l.Hostname != nil {
			hs = append(hs, string(l.Name)+": "+string(*l.Hostname))
		}
	}
	return strings.Join(hs, ", ")
}

// publishesPort reports whether n publishes TCP port.
func publishesPort(n *spec.Node, port int32) bool {
	return slices.Contains(n.Firewall.Published, spec.Port{Protocol: spec.TCP, Number: port})
}

// gatewayAddresses are the Gateway's addresses (IPs or host names): what the names of the
// nodes behind it point at.
func gatewayAddresses(gw *gwv1.Gateway) []string {
	if gw == nil {
		return nil
	}
	var out []string
	for _, a := range gw.Status.Addresses {
		out = append(out, a.Value)
	}
	return out
}
