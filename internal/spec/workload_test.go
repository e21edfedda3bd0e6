package spec_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"slipway.dev/slipway/internal/spec"
)

// web is the head of a fixture: a group with node web, its image on line 4; the field under
// test starts on line 5.
func web(lines ...string) string {
	return doc(append([]string{"group: demo", "nodes:", "  web:", "    image: {rootfs: nodes/web/rootfs}"}, lines...)...)
}

// TestParseInvalidWorkload: each bad value of the workload fields (SPEC §3a) gives one exact
// message at its line.
func TestParseInvalidWorkload(t *testing.T) {
	tests := []struct {
		name string
		file string
		want []string
	}{
		// labels, annotations, serviceAnnotations
		{"label clashes with slipway's name label", web(
			"    labels: {team: web, app.kubernetes.io/name: other}",
		), []string{`slipway.yaml:5: nodes.web.labels.app.kubernetes.io/name: label app.kubernetes.io/name is slipway's own and cannot be set`}},
		{"role label clashes with slipway's domain", web(
			"    roles:",
			"      worker:",
			"        labels: {slipway.dev/role: other}",
		), []string{`slipway.yaml:7: nodes.web.roles.worker.labels.slipway.dev/role: label slipway.dev/role is slipway's own and cannot be set`}},
		{"annotation in slipway's domain", web(
			"    annotations: {slipway.dev/config-hash: x}",
		), []string{`slipway.yaml:5: nodes.web.annotations.slipway.dev/config-hash: annotation slipway.dev/config-hash is slipway's own and cannot be set`}},
		{"label key not a qualified name", web(
			"    labels: {Bad Key: x}",
		), []string{`slipway.yaml:5: nodes.web.labels.Bad Key: "Bad Key" is not a label key (an optional DNS subdomain and '/', then at most 63 letters, digits, '-', '_' and '.', starting and ending with a letter or digit)`}},
		{"label value too odd", web(
			"    labels: {team: \"web team\"}",
		), []string{`slipway.yaml:5: nodes.web.labels.team: "web team" is not a label value (at most 63 letters, digits, '-', '_' and '.', starting and ending with a letter or digit)`}},
		{"labels of the wrong type", web(
			"    labels: [team]",
		), []string{`slipway.yaml:5: nodes.web.labels: must be a mapping, not a list`}},
		{"label written twice", web(
			"    labels:",
			"      team: a",
			"      team: b",
		), []string{`slipway.yaml:7: nodes.web.labels.team: duplicate key (first at line 6)`}},
		{"annotation value not a string", web(
			"    annotations: {example.org/owner: {name: ops}}",
		), []string{`slipway.yaml:5: nodes.web.annotations.example.org/owner: must be a string, not a mapping`}},
		{"service annotations not a mapping: one message", web(
			"    serviceAnnotations: [metallb.universe.tf/loadBalancerIPs]",
		), []string{`slipway.yaml:5: nodes.web.serviceAnnotations: must be a mapping, not a list`}},
		{"service annotations without a Service", web(
			"    serviceAnnotations: {metallb.universe.tf/loadBalancerIPs: 192.0.2.10}",
		), []string{`slipway.yaml:5: nodes.web.serviceAnnotations: node web has no Service (no published, admin or operator port) to annotate`}},
		// placement
		{"unknown placement field", web(
			"    placement: {nodeSelectors: {disktype: ssd}}",
		), []string{`slipway.yaml:5: nodes.web.placement.nodeSelectors: unknown field "nodeSelectors"`}},
		{"node selector value not a label value", web(
			"    placement: {nodeSelector: {disktype: \"s s d\"}}",
		), []string{`slipway.yaml:5: nodes.web.placement.nodeSelector.disktype: "s s d" is not a label value (at most 63 letters, digits, '-', '_' and '.', starting and ending with a letter or digit)`}},
		{"bad toleration operator and unknown key", web(
			"    placement:",
			"      tolerations:",
			"        - {key: a, operator: Matches}",
			"        - {key: b, efect: NoSchedule}",
		), []string{
			`slipway.yaml:7: nodes.web.placement.tolerations[0].operator: "Matches" is not Equal or Exists`,
			`slipway.yaml:8: nodes.web.placement.tolerations[1].efect: unknown field "efect"`,
		}},
		{"bad toleration effect and seconds", web(
			"    placement:",
			"      tolerations: [{key: a, effect: NoRun, tolerationSeconds: 1m}]",
		), []string{
			`slipway.yaml:6: nodes.web.placement.tolerations[0].effect: "NoRun" is not NoSchedule, PreferNoSchedule or NoExecute`,
			`slipway.yaml:6: nodes.web.placement.tolerations[0].tolerationSeconds: must be an integer, not a string`,
		}},
		{"toleration repeated", web(
			"    placement:",
			"      tolerations:",
			"        - {key: a, operator: Exists}",
			"        - {key: a, operator: Exists}",
		), []string{`slipway.yaml:8: nodes.web.placement.tolerations[1]: toleration is repeated`}},
		{"affinity with an unknown field", web(
			"    placement:",
			"      affinity: {nodeAfinity: {}}",
		), []string{`slipway.yaml:6: nodes.web.placement.affinity: is not a Kubernetes affinity: unknown field "nodeAfinity"`}},
		{"affinity not a mapping", web(
			"    placement: {affinity: [zone]}",
		), []string{`slipway.yaml:5: nodes.web.placement.affinity: must be a mapping, not a list`}},
		{"protect not a boolean", web(
			"    state: {protect: maybe}",
		), []string{`slipway.yaml:5: nodes.web.state.protect: must be true or false, not a string`}},
		{"state version with a space", web(
			"    state: {version: 'v 2'}",
		), []string{`slipway.yaml:5: nodes.web.state.version: state version "v 2": only letters, digits, '.', '_' and '-'`}},
		{"state version empty", web(
			"    state: {version: ''}",
		), []string{`slipway.yaml:5: nodes.web.state.version: state version "" must be 1 to 63 characters`}},
		{"spread not a boolean", web(
			"    placement: {spread: yes-please}",
		), []string{`slipway.yaml:5: nodes.web.placement.spread: must be true or false, not a string`}},
		// disruption
		{"disruption with both budgets", web(
			"    disruption: {maxUnavailable: 1, minAvailable: 1}",
		), []string{`slipway.yaml:5: nodes.web.disruption: has maxUnavailable and minAvailable; set one`}},
		{"disruption with neither", web(
			"    disruption: {}",
		), []string{`slipway.yaml:5: nodes.web.disruption: needs maxUnavailable or minAvailable`}},
		{"disruption with a misspelt budget", web(
			"    roles:",
			"      worker:",
			"        replicas: 2",
			"        disruption: {maxUnavailabel: 1}",
		), []string{`slipway.yaml:8: nodes.web.roles.worker.disruption.maxUnavailabel: unknown field "maxUnavailabel"`}},
		{"disruption not a mapping", web(
			"    disruption: 1",
		), []string{`slipway.yaml:5: nodes.web.disruption: must be a mapping, not an integer`}},
		{"disruption budget of the wrong type", web(
			"    disruption: {maxUnavailable: [1]}",
		), []string{`slipway.yaml:5: nodes.web.disruption.maxUnavailable: must be an integer, not a list`}},
		{"disruption budget left empty", web(
			"    disruption: {maxUnavailable: ~}",
		), []string{`slipway.yaml:5: nodes.web.disruption: needs maxUnavailable or minAvailable`}},
		{"disruption with a bad percentage and a negative count", web(
			"    disruption: {maxUnavailable: 150%}",
			"    roles:",
			"      worker: {replicas: 3, disruption: {minAvailable: -1}}",
		), []string{
			`slipway.yaml:5: nodes.web.disruption.maxUnavailable: "150%" is not a number of pods or a percentage (0%-100%)`,
			`slipway.yaml:7: nodes.web.roles.worker.disruption.minAvailable: -1 is not a number of pods (0 or more)`,
		}},
		// probes and stopping
		{"liveness with two checks", web(
			"    probes:",
			"      liveness: {tcp: 80, exec: [true]}",
		), []string{`slipway.yaml:6: nodes.web.probes.liveness: has exec and tcp; set exactly one of exec, http or tcp`}},
		{"startup with bad period and failures", web(
			"    probes:",
			"      startup: {tcp: 80, period: 1500ms, failures: 0}",
		), []string{
			`slipway.yaml:6: nodes.web.probes.startup.failures: failures 0 is not 1 or more`,
			`slipway.yaml:6: nodes.web.probes.startup.period: duration 1.5s is not a whole number of seconds`,
		}},
		{"misspelt probe check: one message", web(
			"    probes:",
			"      liveness: {tcpp: 80}",
		), []string{`slipway.yaml:6: nodes.web.probes.liveness.tcpp: unknown field "tcpp"`}},
		{"probe failures of the wrong type", web(
			"    probes:",
			"      startup: {tcp: 80, failures: many}",
		), []string{`slipway.yaml:6: nodes.web.probes.startup.failures: must be an integer, not a string`}},
		{"misspelt http probe port: one message", web(
			"    probes:",
			"      liveness: {http: {prt: 8080}}",
		), []string{`slipway.yaml:6: nodes.web.probes.liveness.http.prt: unknown field "prt"`}},
		{"unknown probe", web(
			"    probes: {readiness: {tcp: 80}}",
		), []string{`slipway.yaml:5: nodes.web.probes.readiness: unknown field "readiness"`}},
		{"bad durations", web(
			"    stopGracePeriod: forever",
			"    preStopSleep: 10",
		), []string{
			`slipway.yaml:5: nodes.web.stopGracePeriod: "forever" is not a duration (e.g. 90s, 5m, 1h30m)`,
			`slipway.yaml:6: nodes.web.preStopSleep: must be a string, not an integer`,
		}},
		{"preStop sleep not shorter than the grace period", web(
			"    stopGracePeriod: 20s",
			"    preStopSleep: 20s",
		), []string{`slipway.yaml:6: nodes.web.preStopSleep: preStopSleep 20s is not shorter than the stop grace period 20s`}},
		{"preStop sleep beyond the default grace period", web(
			"    preStopSleep: 1m",
		), []string{`slipway.yaml:5: nodes.web.preStopSleep: preStopSleep 1m0s is not shorter than the stop grace period 30s`}},
		{"bad tmpSize quantity", web(
			"    tmpSize: lots",
		), []string{`slipway.yaml:5: nodes.web.tmpSize: "lots" is not a quantity (e.g. 500m, 1Gi)`}},
		{"tmpSize and serviceAnnotations of defaults apply where they fit, no further", doc(
			"group: demo",
			"defaults:",
			"  tmpSize: 64Mi",
			"  serviceAnnotations: {example.org/lb: a}",
			"  preStopSleep: 40s",
			"nodes:",
			"  web: {image: {rootfs: nodes/web/rootfs}, init: none}",
		), []string{`slipway.yaml:5: nodes.web.preStopSleep: preStopSleep 40s is not shorter than the stop grace period 30s`}},
		{"negative tmpSize", web(
			"    tmpSize: -64Mi",
		), []string{`slipway.yaml:5: nodes.web.tmpSize: quantity -64Mi is negative`}},
		{"tmpSize of the wrong type", web(
			"    tmpSize: [64Mi]",
		), []string{`slipway.yaml:5: nodes.web.tmpSize: must be a quantity (e.g. 500m, 1Gi), not a list`}},
		{"tmpSize without systemd", web(
			"    init: none",
			"    tmpSize: 64Mi",
		), []string{`slipway.yaml:6: nodes.web.tmpSize: needs init: systemd (only its /run and /tmp are memory-backed)`}},
		{"stop fields are the node's, not a role's", web(
			"    roles:",
			"      worker: {stopGracePeriod: 10s}",
		), []string{`slipway.yaml:6: nodes.web.roles.worker.stopGracePeriod: unknown field "stopGracePeriod"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { checkErrors(t, tt.file, tt.want) })
	}
}

// TestLoadWorkload: what a valid file's workload fields load to, a role taking the node's
// fields it does not set, and the defaults.
func TestLoadWorkload(t *testing.T) {
	g, err := spec.Parse("slipway.yaml", []byte(doc(
		"group: demo",
		"defaults:",
		"  labels: {team: ops, env: prod}",
		"nodes:",
		"  web:",
		"    image: {rootfs: nodes/web/rootfs}",
		"    labels: {team: web}",
		"    placement: {nodeSelector: {disktype: ssd}, tolerations: [{key: a, operator: Exists}]}",
		"    disruption: {minAvailable: 1}",
		"    probes: {liveness: {tcp: 80}}",
		"    stopGracePeriod: 90s",
		"    preStopSleep: 5s",
		"    tmpSize: 64Mi",
		"    roles:",
		"      worker: {replicas: 3}",
		"      api: {replicas: 2, placement: {spread: false}, disruption: {maxUnavailable: 25%}}",
		"      sso: {service: {image: {archive: build/sso.tar}}}",
	)), root)
	if err != nil {
		t.Fatal(err)
	}
	n := g.Node("web")
	one := intstr.FromInt32(1)
	quarter := intstr.FromString("25%")
	node := spec.Workload{
		Labels: map[string]string{"team": "web", "env": "prod"},
		Placement: spec.Placement{NodeSelector: map[string]string{"disktype": "ssd"},
			Tolerations: []corev1.Toleration{{Key: "a", Operator: corev1.TolerationOpExists}}, Spread: true},
		Disruption: &spec.Disruption{MinAvailable: &one},
		Probes:     spec.Probes{Liveness: &spec.CheckProbe{Probe: spec.Probe{TCP: 80}, Period: 10 * time.Second, Failures: 3}},
	}
	sso := node
	sso.Probes = spec.Probes{} // a service role checks its own image only
	want := map[string]spec.Workload{
		"":       node,
		"worker": node,
		"api":    {Labels: node.Labels, Placement: spec.Placement{Spread: false}, Disruption: &spec.Disruption{MaxUnavailable: &quarter}, Probes: node.Probes},
		"sso":    sso,
	}
	got := map[string]spec.Workload{"": n.Workload}
	for _, r := range n.Roles {
		got[r.Name] = r.Workload
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("workload (-want +got):\n%s", diff)
	}
	if n.StopGracePeriod != 90*time.Second || n.PreStopSleep != 5*time.Second || n.TmpSize == nil || n.TmpSize.String() != "64Mi" {
		t.Errorf("stop fields: grace %s, sleep %s, tmp %v", n.StopGracePeriod, n.PreStopSleep, n.TmpSize)
	}
}
