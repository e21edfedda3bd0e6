package spec_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"slipway.dev/slipway/internal/spec"
)

// reach is a fixture whose node web has a role worker with port 8080 and metrics 9101 (line
// 5) and serves 443 and 9100 (line 7); the firewall fields under test start on line 8.
func reach(lines ...string) string {
	return web(append([]string{
		"    roles: {worker: {ports: [8080], metrics: 9101}}",
		"    firewall:",
		"      served: [443, 9100]",
	}, lines...)...)
}

const labelKeyRule = "(an optional DNS subdomain and '/', then at most 63 letters, digits, '-', '_' and '.', starting and ending with a letter or digit)"

// TestParseInvalidReach: each bad value of firewall.fromNamespaces and firewall.egress (SPEC
// §3a) gives one exact message at its line.
func TestParseInvalidReach(t *testing.T) {
	tests := []struct {
		name string
		file string
		want string
	}{
		{"unknown key in fromNamespaces", reach(
			"      fromNamespaces:",
			"        - {namespace: {team: edge}, ports: [443], port: 80}",
		), `slipway.yaml:9: nodes.web.firewall.fromNamespaces[0].port: unknown field "port"`},
		{"unknown key in egress", reach(
			"      egress: [{cidr: 10.20.0.0/16, ports: [5432], to: db}]",
		), `slipway.yaml:8: nodes.web.firewall.egress[0].to: unknown field "to"`},
		{"misspelt namespace in fromNamespaces: one message", reach(
			"      fromNamespaces: [{namespac: {team: edge}, ports: [443]}]",
		), `slipway.yaml:8: nodes.web.firewall.fromNamespaces[0].namespac: unknown field "namespac"`},
		{"misspelt cidr in egress: one message", reach(
			"      egress: [{cidrr: 10.20.0.0/16, ports: [5432]}]",
		), `slipway.yaml:8: nodes.web.firewall.egress[0].cidrr: unknown field "cidrr"`},
		{"misspelt ports in egress: one message", reach(
			"      egress: [{cidr: 10.20.0.0/16, prts: [5432]}]",
		), `slipway.yaml:8: nodes.web.firewall.egress[0].prts: unknown field "prts"`},
		{"fromNamespaces not a list", reach(
			"      fromNamespaces: {namespace: {team: edge}, ports: [443]}",
		), `slipway.yaml:8: nodes.web.firewall.fromNamespaces: must be a list, not a mapping`},
		{"namespace selector not a mapping", reach(
			"      fromNamespaces: [{namespace: ingress, ports: [443]}]",
		), `slipway.yaml:8: nodes.web.firewall.fromNamespaces[0].namespace: must be a mapping, not a string`},
		{"ports not a list", reach(
			"      egress: [{cidr: 10.20.0.0/16, ports: 5432}]",
		), `slipway.yaml:8: nodes.web.firewall.egress[0].ports: must be a list, not an integer`},
		{"bad namespace selector key", reach(
			"      fromNamespaces:",
			"        - {namespace: {Bad Key: ingress}, ports: [443]}",
		), `slipway.yaml:9: nodes.web.firewall.fromNamespaces[0].namespace.Bad Key: "Bad Key" is not a namespace selector key ` + labelKeyRule},
		{"bad pod selector value", reach(
			"      fromNamespaces:",
			"        - {namespace: {team: monitoring}, pods: {app: \"pro metheus\"}, ports: [9100]}",
		), `slipway.yaml:9: nodes.web.firewall.fromNamespaces[0].pods.app: "pro metheus" is not a label value (at most 63 letters, digits, '-', '_' and '.', starting and ending with a letter or digit)`},
		{"bad egress pod selector key", reach(
			"      egress:",
			"        - {namespace: {team: vault}, pods: {-app: vault}, ports: [8200]}",
		), `slipway.yaml:9: nodes.web.firewall.egress[0].pods.-app: "-app" is not a pod selector key ` + labelKeyRule},
		{"empty namespace selector", reach(
			"      fromNamespaces: [{namespace: {}, ports: [443]}]",
		), `slipway.yaml:8: nodes.web.firewall.fromNamespaces[0].namespace: needs at least one label (an empty namespace selector matches everything)`},
		{"fromNamespaces port out of range", reach(
			"      fromNamespaces:",
			"        - {namespace: {team: edge}, ports: [443, 70000]}",
		), `slipway.yaml:9: nodes.web.firewall.fromNamespaces[0].ports[1]: port 70000 is out of range (1-65535)`},
		{"egress port out of range", reach(
			"      egress:",
			"        - {cidr: 10.20.0.0/16, ports: [udp/0]}",
		), `slipway.yaml:9: nodes.web.firewall.egress[0].ports[0]: port 0 is out of range (1-65535)`},
		{"fromNamespaces port served by nothing", reach(
			"      fromNamespaces:",
			"        - {namespace: {team: edge}, ports: [443]}",
			"        - {namespace: {team: edge}, ports: [9101, 8443]}",
		), `slipway.yaml:10: nodes.web.firewall.fromNamespaces[1].ports[1]: port 8443 is not served by node web nor a port of its roles`},
		{"a refused port leaves the rest unchecked, not misplaced", reach(
			"      fromNamespaces:",
			"        - {namespace: {team: edge}, ports: [udp/x, 8443]}",
		), `slipway.yaml:9: nodes.web.firewall.fromNamespaces[0].ports[0]: "udp/x" is not a port (80, tcp/80 or udp/53)`},
		{"bad egress CIDR", reach(
			"      egress: [{cidr: 10.20.0.0/33, ports: [5432]}]",
		), `slipway.yaml:8: nodes.web.firewall.egress[0].cidr: "10.20.0.0/33" is not a CIDR (e.g. 10.0.0.0/8, 2001:db8::/32)`},
		{"egress CIDR with host bits", reach(
			"      egress:",
			"        - {cidr: 10.20.0.1/16, ports: [5432]}",
		), `slipway.yaml:9: nodes.web.firewall.egress[0].cidr: CIDR 10.20.0.1/16 has bits set after the prefix (did you mean 10.20.0.0/16?)`},
		{"egress with cidr and namespace", reach(
			"      egress:",
			"        - {cidr: 10.20.0.0/16, namespace: {team: db}, ports: [5432]}",
		), `slipway.yaml:9: nodes.web.firewall.egress[0]: has cidr and namespace; set one`},
		{"egress with neither", reach(
			"      egress: [{ports: [5432]}]",
		), `slipway.yaml:8: nodes.web.firewall.egress[0]: needs cidr or namespace`},
		{"egress pods beside a cidr", reach(
			"      egress: [{cidr: 10.20.0.0/16, pods: {app: db}, ports: [5432]}]",
		), `slipway.yaml:8: nodes.web.firewall.egress[0].pods: needs namespace (a cidr has no pods)`},
		{"fromNamespaces without namespace", reach(
			"      fromNamespaces: [{pods: {app: proxy}, ports: [443]}]",
		), `slipway.yaml:8: nodes.web.firewall.fromNamespaces[0].namespace: is required`},
		{"egress without ports", reach(
			"      egress: [{namespace: {team: vault}}]",
		), `slipway.yaml:8: nodes.web.firewall.egress[0].ports: is required`},
		{"fromNamespaces with no port", reach(
			"      fromNamespaces:",
			"        - {namespace: {team: edge}, ports: []}",
		), `slipway.yaml:9: nodes.web.firewall.fromNamespaces[0].ports: needs at least one port`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { checkErrors(t, tt.file, []string{tt.want}) })
	}
}

// TestLoadReach: what the fields load to; an egress list taken from defaults, an empty one
// kept as "restricted" (not nil), selectors that match slipway's own labels allowed.
func TestLoadReach(t *testing.T) {
	g, err := spec.Parse("slipway.yaml", []byte(doc(
		"group: demo",
		"defaults:",
		"  firewall: {egress: [{cidr: 10.20.0.0/16, ports: [5432, udp/514]}]}",
		"nodes:",
		"  web:",
		"    image: {rootfs: nodes/web/rootfs}",
		"    roles: {worker: {ports: [8080], metrics: 9101}}",
		"    firewall:",
		"      served: [443, 9100]",
		"      fromNamespaces:",
		"        - {namespace: {kubernetes.io/metadata.name: ingress}, ports: [443]}",
		"        - {namespace: {slipway.dev/group: ops}, pods: {app.kubernetes.io/name: prometheus}, ports: [9100, 9101]}",
		"  db:",
		"    image: {rootfs: nodes/web/rootfs}",
		"    firewall:",
		"      egress: []",
		"  open:",
		"    image: {rootfs: nodes/web/rootfs}",
		"    firewall: {egress: null}",
	)), root)
	if err != nil {
		t.Fatal(err)
	}
	type reach struct{ From, Egress []spec.Peer }
	got := map[string]reach{}
	for _, n := range g.Nodes {
		got[n.Name] = reach{n.Firewall.FromNamespaces, n.Firewall.Egress}
	}
	tcp := func(n int32) spec.Port { return spec.Port{Protocol: spec.TCP, Number: n} }
	fromDefaults := []spec.Peer{{CIDR: "10.20.0.0/16", Ports: []spec.Port{tcp(5432), {Protocol: spec.UDP, Number: 514}}}}
	want := map[string]reach{
		"web": {
			From: []spec.Peer{
				{Namespace: map[string]string{"kubernetes.io/metadata.name": "ingress"}, Ports: []spec.Port{tcp(443)}},
				{Namespace: map[string]string{"slipway.dev/group": "ops"}, Pods: map[string]string{"app.kubernetes.io/name": "prometheus"},
					Ports: []spec.Port{tcp(9100), tcp(9101)}},
			},
			Egress: fromDefaults,
		},
		"db":   {Egress: []spec.Peer{}},
		"open": {Egress: fromDefaults}, // null counts as not written: the defaults' value
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("firewall reach (-want +got):\n%s", diff)
	}
}
