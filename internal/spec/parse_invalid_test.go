package spec_test

// Group files Parse refuses, each with the errors it reports (file:line and the cause), in order.

import (
	"strings"
	"testing"
)

func TestParseInvalid(t *testing.T) {
	long := strings.Repeat("a", 52)
	tests := []struct {
		name string
		file string
		want []string
	}{
		{"group name not a DNS label", doc(
			"group: Demo_1",
			"nodes:",
			"  web: {image: {rootfs: nodes/web/rootfs}}",
		), []string{`slipway.yaml:1: group: name "Demo_1" is not a DNS label (lowercase letters, digits and '-', starting and ending with a letter or digit, at most 63 characters)`}},
		{"node name not a DNS label", doc(
			"group: demo",
			"nodes:",
			"  1web:",
			"    image: {rootfs: nodes/web/rootfs}",
		), []string{`slipway.yaml:3: nodes.1web: name "1web" is not a DNS label (lowercase letters, digits and '-', starting with a letter and ending with a letter or digit, at most 63 characters)`}},
		{"role name not a DNS label", doc(
			"group: demo",
			"nodes:",
			"  web:",
			"    image: {rootfs: nodes/web/rootfs}",
			"    roles:",
			"      Worker: {replicas: 1}",
		), []string{`slipway.yaml:6: nodes.web.roles.Worker: name "Worker" is not a DNS label (lowercase letters, digits and '-', starting and ending with a letter or digit, at most 63 characters)`}},
		{"derived name over 63 characters", doc(
			"group: demo",
			"nodes:",
			"  web:",
			"    image: {rootfs: nodes/web/rootfs}",
			"    roles:",
			"      "+long+": {metrics: 9101}",
		), []string{`slipway.yaml:6: nodes.web.roles.` + long + `: name "web-` + long + `-metrics" of its Service is 64 characters, more than 63`}},
		{"two derived names collide", doc(
			"group: demo",
			"nodes:",
			"  a:",
			"    image: {rootfs: nodes/web/rootfs}",
			"    roles:",
			"      b: {replicas: 1}",
			"  a-b:",
			"    image: {rootfs: nodes/web/rootfs}",
		), []string{`slipway.yaml:7: nodes.a-b: Deployment a-b collides with the one of role b of node a`}},
		{"node named like the default-deny policy", doc(
			"group: demo",
			"nodes:",
			"  default-deny:",
			"    image: {rootfs: nodes/web/rootfs}",
		), []string{`slipway.yaml:3: nodes.default-deny: NetworkPolicy default-deny collides with the one of the group's default-deny policy`}},
		{"published port not served", doc(
			"group: demo",
			"nodes:",
			"  web:",
			"    image: {rootfs: nodes/web/rootfs}",
			"    firewall:",
			"      served: [80, 443]",
			"      published:",
			"        - 443",
			"        - 8443",
		), []string{`slipway.yaml:9: nodes.web.firewall.published[1]: port 8443 is not served`}},
		{"admin and operator ports not served", doc(
			"group: demo",
			"nodes:",
			"  web:",
			"    image: {rootfs: nodes/web/rootfs}",
			"    firewall:",
			"      served: [22, udp/53]",
			"      admin: [tcp/22, udp/22]",
			"      operator: [53]",
		), []string{
			`slipway.yaml:7: nodes.web.firewall.admin[1]: port udp/22 is not served`,
			`slipway.yaml:8: nodes.web.firewall.operator[0]: port 53 is not served`,
		}},
		{"port 0", doc(
			"group: demo",
			"nodes:",
			"  web:",
			"    image: {rootfs: nodes/web/rootfs}",
			"    firewall: {served: [0]}",
		), []string{`slipway.yaml:5: nodes.web.firewall.served[0]: port 0 is out of range (1-65535)`}},
		{"port 70000", doc(
			"group: demo",
			"nodes:",
			"  web:",
			"    image: {rootfs: nodes/web/rootfs}",
			"    firewall:",
			"      served: [80, udp/70000]",
		), []string{`slipway.yaml:6: nodes.web.firewall.served[1]: port 70000 is out of range (1-65535)`}},
		{"duplicate port", doc(
			"group: demo",
			"nodes:",
			"  web:",
			"    image: {rootfs: nodes/web/rootfs}",
			"    firewall:",
			"      served: [80, 443, tcp/80]",
		), []string{`slipway.yaml:6: nodes.web.firewall.served[2]: port 80 is repeated`}},
		{"bad port form", doc(
			"group: demo",
			"nodes:",
			"  web:",
			"    image: {rootfs: nodes/web/rootfs}",
			"    firewall:",
			"      served: [sctp/80, http]",
		), []string{
			`slipway.yaml:6: nodes.web.firewall.served[0]: protocol "sctp" is not tcp or udp`,
			`slipway.yaml:6: nodes.web.firewall.served[1]: "http" is not a port (80, tcp/80 or udp/53)`,
		}},
		{"bad CIDR", doc(
			"group: demo",
			"nodes:",
			"  web:",
			"    image: {rootfs: nodes/web/rootfs}",
			"    firewall:",
			"      internalSources: [10.0.0.0/8, 10.300.0.0/16]",
		), []string{`slipway.yaml:6: nodes.web.firewall.internalSources[1]: "10.300.0.0/16" is not a CIDR (e.g. 10.0.0.0/8, 2001:db8::/32)`}},
		{"CIDR with host bits", doc(
			"group: demo",
			"nodes:",
			"  web:",
			"    image: {rootfs: nodes/web/rootfs}",
			"    firewall:",
			"      adminSources: [192.0.2.7/24]",
		), []string{`slipway.yaml:6: nodes.web.firewall.adminSources[0]: CIDR 192.0.2.7/24 has bits set after the prefix (did you mean 192.0.2.0/24?)`}},
		{"bad quantity", doc(
			"group: demo",
			"nodes:",
			"  web:",
			"    image: {rootfs: nodes/web/rootfs}",
			"    state: {size: 5GB}",
		), []string{`slipway.yaml:5: nodes.web.state.size: "5GB" is not a quantity (e.g. 500m, 1Gi)`}},
		{"request above limit", doc(
			"group: demo",
			"nodes:",
			"  web:",
			"    image: {rootfs: nodes/web/rootfs}",
			"    resources:",
			"      requests: {memory: 2Gi}",
			"      limits: {memory: 1Gi}",
		), []string{`slipway.yaml:6: nodes.web.resources.requests.memory: request 2Gi is more than the limit 1Gi`}},
		{"bad duration", doc(
			"group: demo",
			"nodes:",
			"  web:",
			"    image: {rootfs: nodes/web/rootfs}",
			"    rolloutTimeout: 5 minutes",
		), []string{`slipway.yaml:5: nodes.web.rolloutTimeout: "5 minutes" is not a duration (e.g. 90s, 5m, 1h30m)`}},
		{"unknown field", doc(
			"group: demo",
			"nodes:",
			"  web:",
			"    image: {rootfs: nodes/web/rootfs}",
			"    firewall:",
			"      sevred: [80]",
		), []string{`slipway.yaml:6: nodes.web.firewall.sevred: unknown field "sevred"`}},
		{"unknown top-level field", doc(
			"group: demo",
			"nodes: {}",
			"registry: example.org",
		), []string{`slipway.yaml:3: registry: unknown field "registry"`}},
		{"two image sources", doc(
			"group: demo",
			"nodes:",
			"  web:",
			"    image:",
			"      rootfs: nodes/web/rootfs",
			"      archive: build/sso.tar",
		), []string{`slipway.yaml:5: nodes.web.image: has rootfs and archive; set exactly one of rootfs, archive or base`}},
		{"no image", doc(
			"group: demo",
			"nodes:",
			"  web:",
			"    init: none",
		), []string{`slipway.yaml:3: nodes.web: image is required (one of rootfs, archive or base)`}},
		{"missing rootfs directory", doc(
			"group: demo",
			"nodes:",
			"  web:",
			"    image: {rootfs: nodes/wbe/rootfs}",
		), []string{`slipway.yaml:4: nodes.web.image.rootfs: directory nodes/wbe/rootfs does not exist`}},
		{"rootfs is a file", doc(
			"group: demo",
			"nodes:",
			"  web:",
			"    image: {rootfs: build/file.txt}",
		), []string{`slipway.yaml:4: nodes.web.image.rootfs: build/file.txt is not a directory`}},
		{"missing archive", doc(
			"group: demo",
			"nodes:",
			"  web:",
			"    image: {rootfs: nodes/web/rootfs}",
			"    roles:",
			"      sso:",
			"        service:",
			"          image: {archive: build/nope.tar}",
		), []string{`slipway.yaml:8: nodes.web.roles.sso.service.image.archive: file build/nope.tar does not exist`}},
		{"add without base", doc(
			"group: demo",
			"nodes:",
			"  web:",
			"    image:",
			"      rootfs: nodes/web/rootfs",
			"      add: [{src: build/file.txt, dst: /etc/x}]",
		), []string{`slipway.yaml:6: nodes.web.image.add: needs base: add puts files on top of a base image`}},
		{"missing add source", doc(
			"group: demo",
			"nodes:",
			"  web:",
			"    image:",
			"      base: registry.example/base:1",
			"      add:",
			"        - {src: conf/x.conf, dst: /etc/x.conf}",
			"        - {src: build/file.txt, dst: etc/y}",
		), []string{
			`slipway.yaml:7: nodes.web.image.add[0].src: conf/x.conf does not exist`,
			`slipway.yaml:8: nodes.web.image.add[1].dst: "etc/y" is not an absolute file path`,
		}},
		{"negative replicas", doc(
			"group: demo",
			"nodes:",
			"  web:",
			"    image: {rootfs: nodes/web/rootfs}",
			"    roles:",
			"      worker:",
			"        replicas: -1",
		), []string{`slipway.yaml:7: nodes.web.roles.worker.replicas: replicas -1 is negative`}},
		{"wrong type", doc(
			"group: demo",
			"nodes:",
			"  web:",
			"    image: {rootfs: nodes/web/rootfs}",
			"    roles:",
			"      worker:",
			"        replicas: two",
		), []string{`slipway.yaml:7: nodes.web.roles.worker.replicas: must be an integer, not a string`}},
		{"list where a mapping belongs", doc(
			"group: demo",
			"nodes:",
			"  web:",
			"    image: [nodes/web/rootfs]",
		), []string{`slipway.yaml:4: nodes.web.image: must be a mapping, not a list`}},
		{"duplicate key", doc(
			"group: demo",
			"nodes:",
			"  web:",
			"    image: {rootfs: nodes/web/rootfs}",
			"    init: none",
			"    init: systemd",
		), []string{`slipway.yaml:6: nodes.web.init: duplicate key (first at line 5)`}},
		{"duplicate node", doc(
			"group: demo",
			"nodes:",
			"  web:",
			"    image: {rootfs: nodes/web/rootfs}",
			"  web:",
			"    image: {rootfs: nodes/web/rootfs}",
		), []string{`slipway.yaml:5: nodes.web: duplicate key (first at line 3)`}},
		{"bad init", doc(
			"group: demo",
			"nodes:",
			"  web:",
			"    image: {rootfs: nodes/web/rootfs}",
			"    init: sysv",
		), []string{`slipway.yaml:5: nodes.web.init: "sysv" is not systemd or none`}},
		{"two readiness probes", doc(
			"group: demo",
			"nodes:",
			"  web:",
			"    image: {rootfs: nodes/web/rootfs}",
			"    readiness:",
			"      exec: [\"true\"]",
			"      tcp: 80",
		), []string{`slipway.yaml:6: nodes.web.readiness: has exec and tcp; set exactly one of exec, http or tcp`}},
		{"exec with a non-string", doc(
			"group: demo",
			"nodes:",
			"  web:",
			"    image: {rootfs: nodes/web/rootfs}",
			"    readiness: {exec: [test, -e, true]}",
		), []string{`slipway.yaml:5: nodes.web.readiness.exec[2]: must be a string, not a boolean`}},
		{"reserved environment variable", doc(
			"group: demo",
			"nodes:",
			"  web:",
			"    image: {rootfs: nodes/web/rootfs}",
			"    env: {container_uuid: x, 9LIVES: y}",
		), []string{
			`slipway.yaml:5: nodes.web.env.9LIVES: "9LIVES" is not an environment variable name (letters, digits, '_', '-' and '.', not starting with a digit)`,
			`slipway.yaml:5: nodes.web.env.container_uuid: container_uuid is set by slipway`,
		}},
		{"missing group and nodes", doc(
			"namespace: demo",
		), []string{
			`slipway.yaml:1: group: is required`,
			`slipway.yaml:1: nodes: is required`,
		}},
		{"YAML syntax", doc(
			"group: demo",
			"nodes:",
			"  web: {image: {rootfs: nodes/web/rootfs}",
			"  db: x",
		), []string{`slipway.yaml:3: invalid YAML: did not find expected ',' or '}'`}},
		{"YAML tab", doc(
			"group: demo",
			"nodes:",
			"\tweb: {}",
		), []string{`slipway.yaml:3: invalid YAML: found character that cannot start any token`}},
		{"error in defaults reported once", doc(
			"group: demo",
			"defaults:",
			"  state: {size: lots}",
			"nodes:",
			"  web: {image: {rootfs: nodes/web/rootfs}}",
			"  db: {image: {rootfs: nodes/web/rootfs}}",
		), []string{`slipway.yaml:3: defaults.state.size: "lots" is not a quantity (e.g. 500m, 1Gi)`}},
		{"defaulted port checked per node", doc(
			"group: demo",
			"defaults:",
			"  firewall: {published: [443]}",
			"nodes:",
			"  web:",
			"    image: {rootfs: nodes/web/rootfs}",
			"    firewall: {served: [80]}",
		), []string{`slipway.yaml:3: nodes.web.firewall.published[0]: port 443 is not served`}},
		{"all errors at once", doc(
			"group: demo",
			"nodes:",
			"  web:",
			"    image: {rootfs: nodes/web/rootfs}",
			"    firewall: {served: [80, 80], published: [443]}",
			"    roles:",
			"      worker: {replicas: -2, ports: [0]}",
		), []string{
			`slipway.yaml:5: nodes.web.firewall.published[0]: port 443 is not served`,
			`slipway.yaml:5: nodes.web.firewall.served[1]: port 80 is repeated`,
			`slipway.yaml:7: nodes.web.roles.worker.ports[0]: port 0 is out of range (1-65535)`,
			`slipway.yaml:7: nodes.web.roles.worker.replicas: replicas -2 is negative`,
		}},
	}
	if len(tests) < 25 {
		t.Fatalf("only %d invalid files; the issue asks for 25", len(tests))
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { checkErrors(t, tt.file, tt.want) })
	}
}
