package spec

import (
	"cmp"
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
)

// workloadSet records which workload fields a mapping wrote, so a role takes the node's
// value for each field it did not write.
type workloadSet struct{ labels, annotations, placement, disruption, probes bool }

// workload decodes the fields of SPEC §3a that nodes and roles share.
func (d *decoder) workload(m map[string]*yaml.Node, path string, w *Workload) workloadSet {
	var set workloadSet
	if v := m["labels"]; v != nil {
		w.Labels, set.labels = d.stringMap(v, path+".labels", "label"), true
	}
	if v := m["annotations"]; v != nil {
		w.Annotations, set.annotations = d.stringMap(v, path+".annotations", "annotation"), true
	}
	if v := m["placement"]; v != nil {
		w.Placement, set.placement = d.placement(v, path+".placement"), true
	}
	if v := m["disruption"]; v != nil {
		w.Disruption, set.disruption = d.disruption(v, path+".disruption"), true
	}
	if v := m["probes"]; v != nil {
		w.Probes, set.probes = d.probes(v, path+".probes"), true
	}
	return set
}

// inherit gives role r the node's value of each workload field r did not write.
func inherit(r *Role, set workloadSet, n *Node) {
	if !set.labels {
		r.Labels = n.Labels
	}
	if !set.annotations {
		r.Annotations = n.Annotations
	}
	if !set.placement {
		r.Placement = n.Placement
	}
	if !set.disruption {
		r.Disruption = n.Disruption
	}
	if !set.probes && r.Service == nil {
		r.Probes = n.Probes
	}
}

// nodeStop decodes the node-only fields of §3a: the Service's annotations and how pods stop.
func (d *decoder) nodeStop(m map[string]*yaml.Node, path string, nd *Node) {
	// serviceAnnotations and tmpSize are marked only when the node writes them: taken from
	// defaults:, they apply to the nodes they fit and are no error on the others.
	own := func(v *yaml.Node, field string) {
		if !d.fromDefaults[deref(v)] {
			d.mark(path+"."+field, deref(v))
		}
	}
	if v := m["serviceAnnotations"]; v != nil {
		own(v, "serviceAnnotations")
		nd.ServiceAnnotations = d.stringMap(v, path+".serviceAnnotations", "annotation")
	}
	if v := m["stopGracePeriod"]; v != nil {
		d.mark(path+".stopGracePeriod", deref(v))
		nd.StopGracePeriod, _ = d.seconds(v, path+".stopGracePeriod")
	}
	if v := m["preStopSleep"]; v != nil {
		d.mark(path+".preStopSleep", deref(v))
		nd.PreStopSleep, _ = d.seconds(v, path+".preStopSleep")
	}
	if v := m["tmpSize"]; v != nil {
		own(v, "tmpSize")
		if q, ok := d.quantity(v, path+".tmpSize"); ok {
			if q.Sign() == 0 {
				d.errAt(deref(v), path+".tmpSize", "size must be more than 0")
			} else {
				nd.TmpSize = &q
			}
		}
	}
}

// validateWorkload checks the §3a rules across fields of a node, defaults merged.
func (d *decoder) validateWorkload(n *Node, path string) {
	written := func(field string) bool { _, ok := d.lines[path+"."+field]; return ok }
	// A value of the wrong type is one mistake, reported already.
	if written("serviceAnnotations") && !d.reported(path+".serviceAnnotations") && len(n.Firewall.LoadBalancerPorts()) == 0 {
		d.errPath(path+".serviceAnnotations", "node %s has no Service (no published, admin or operator port) to annotate", n.Name)
	}
	grace := cmp.Or(n.StopGracePeriod, DefaultStopGracePeriod)
	if n.PreStopSleep > 0 && n.PreStopSleep >= grace {
		d.errPath(path+".preStopSleep", "preStopSleep %s is not shorter than the stop grace period %s", n.PreStopSleep, grace)
	}
	if written("tmpSize") && n.Init != InitSystemd {
		d.errPath(path+".tmpSize", "needs init: systemd (only its /run and /tmp are memory-backed)")
	}
}

// stringMap reads labels, annotations or a node selector: keys are qualified names (an
// optional DNS-subdomain prefix and a name); label values follow Kubernetes' label rules.
// Labels and annotations of slipway's own may not be set; a selector may match them.
func (d *decoder) stringMap(n *yaml.Node, path, kind string) map[string]string {
	entries := d.entries(n, path)
	out := make(map[string]string, len(entries))
	for _, e := range entries {
		p := join(path, e.key)
		switch {
		case len(validation.IsQualifiedName(e.key)) > 0:
			d.errAt(e.keyNode, p, "%q is not a %s key (an optional DNS subdomain and '/', then at most 63 letters, digits, '-', '_' and '.', starting and ending with a letter or digit)", e.key, kind)
			continue
		case !strings.HasSuffix(kind, "selector") && (strings.HasPrefix(e.key, reservedLabelPrefix) || slices.Contains(reservedLabels, e.key)):
			d.errAt(e.keyNode, p, "%s %s is slipway's own and cannot be set", kind, e.key)
			continue
		}
		v, ok := d.text(e.val, p)
		if !ok {
			continue
		}
		if kind != "annotation" && len(validation.IsValidLabelValue(v)) > 0 {
			d.errAt(deref(e.val), p, "%q is not a label value (at most 63 letters, digits, '-', '_' and '.', starting and ending with a letter or digit)", v)
			continue
		}
		out[e.key] = v
	}
	return out
}

func (d *decoder) boolean(n *yaml.Node, path string) (bool, bool) {
	n = deref(n)
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" {
		d.errAt(n, path, "must be true or false, not %s", what(n))
		return false, false
	}
	var b bool
	if err := n.Decode(&b); err != nil {
		d.errAt(n, path, "must be true or false, not %s", what(n))
		return false, false
	}
	return b, true
}

// seconds is a duration of whole seconds, as the pod's fields hold them.
func (d *decoder) seconds(n *yaml.Node, path string) (time.Duration, bool) {
	v, ok := d.duration(n, path)
	if !ok {
		return 0, false
	}
	if v%time.Second != 0 {
		d.errAt(deref(n), path, "duration %s is not a whole number of seconds", v)
		return 0, false
	}
	return v, true
}

func (d *decoder) placement(n *yaml.Node, path string) Placement {
	p := Placement{Spread: true}
	m, ok := d.mapping(n, path, placementFields)
	if !ok {
		return p
	}
	if v := m["nodeSelector"]; v != nil {
		p.NodeSelector = d.stringMap(v, path+".nodeSelector", "node selector")
	}
	field(m, path, "tolerations", &p.Tolerations, d.tolerations)
	field(m, path, "affinity", &p.Affinity, d.affinity)
	fieldOK(m, path, "spread", &p.Spread, d.boolean)
	return p
}

var tolerationEffects = []string{"NoSchedule", "PreferNoSchedule", "NoExecute"}

func (d *decoder) tolerations(n *yaml.Node, path string) []corev1.Toleration {
	items, ok := d.seq(n, path)
	if !ok {
		return nil
	}
	out := make([]corev1.Toleration, 0, len(items))
	for i, it := range items {
		ip := index(path, i)
		m, ok := d.mapping(it, ip, tolerationFields)
		if !ok {
			continue
		}
		var t corev1.Toleration
		good := true
		str := func(k string) string {
			if v := m[k]; v != nil {
				s, ok := d.str(v, ip+"."+k)
				good = good && ok
				return s
			}
			return ""
		}
		t.Key, t.Value = str("key"), str("value")
		if op := str("operator"); op != "" {
			if op != string(corev1.TolerationOpEqual) && op != string(corev1.TolerationOpExists) {
				d.errAt(deref(m["operator"]), ip+".operator", "%q is not Equal or Exists", op)
				good = false
			}
			t.Operator = corev1.TolerationOperator(op)
		}
		if ef := str("effect"); ef != "" {
			if !slices.Contains(tolerationEffects, ef) {
				d.errAt(deref(m["effect"]), ip+".effect", "%q is not NoSchedule, PreferNoSchedule or NoExecute", ef)
				good = false
			}
			t.Effect = corev1.TaintEffect(ef)
		}
		if v := m["tolerationSeconds"]; v != nil {
			s, ok := d.int(v, ip+".tolerationSeconds")
			good = good && ok
			t.TolerationSeconds = &s
		}
		if !good {
			continue
		}
		if slices.ContainsFunc(out, func(o corev1.Toleration) bool { return o.MatchToleration(&t) && sameSeconds(o, t) }) {
			d.errAt(deref(it), ip, "toleration is repeated")
			continue
		}
		out = append(out, t)
	}
	return out
}

func sameSeconds(a, b corev1.Toleration) bool {
	if a.TolerationSeconds == nil || b.TolerationSeconds == nil {
		return a.TolerationSeconds == b.TolerationSeconds
	}
	return *a.TolerationSeconds == *b.TolerationSeconds
}

// affinity is passed through as Kubernetes writes it: the loader checks only that it is a
// pod affinity with no unknown field; the API server's dry run checks the rest.
func (d *decoder) affinity(n *yaml.Node, path string) *corev1.Affinity {
	n = deref(n)
	if n.Kind != yaml.MappingNode {
		d.errAt(n, path, "must be a mapping, not %s", what(n))
		return nil
	}
	var v any
	if err := n.Decode(&v); err != nil {
		d.errAt(n, path, "is not a Kubernetes affinity: %s", oneLine(err.Error()))
		return nil
	}
	data, err := json.Marshal(v)
	if err != nil {
		d.errAt(n, path, "is not a Kubernetes affinity: %s", oneLine(err.Error()))
		return nil
	}
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	var a corev1.Affinity
	if err := dec.Decode(&a); err != nil {
		d.errAt(n, path, "is not a Kubernetes affinity: %s", oneLine(strings.TrimPrefix(err.Error(), "json: ")))
		return nil
	}
	return &a
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func (d *decoder) disruption(n *yaml.Node, path string) *Disruption {
	m, ok := d.mapping(n, path, disruptionFields)
	if !ok {
		return nil
	}
	switch {
	case m["maxUnavailable"] != nil && m["minAvailable"] != nil:
		d.errAt(deref(n), path, "has maxUnavailable and minAvailable; set one")
		return nil
	case m["maxUnavailable"] == nil && m["minAvailable"] == nil:
		d.lacks(deref(n), path, "", "needs maxUnavailable or minAvailable")
		return nil
	}
	out := &Disruption{}
	field(m, path, "maxUnavailable", &out.MaxUnavailable, d.budget)
	field(m, path, "minAvailable", &out.MinAvailable, d.budget)
	if out.MaxUnavailable == nil && out.MinAvailable == nil {
		return nil
	}
	return out
}

// budget is a number of pods (an integer ≥ 0) or a share of them ("50%").
func (d *decoder) budget(n *yaml.Node, path string) *intstr.IntOrString {
	n = deref(n)
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!str" {
		pct, ok := strings.CutSuffix(n.Value, "%")
		v, err := strconv.Atoi(pct)
		if !ok || err != nil || v < 0 || v > 100 {
			d.errAt(n, path, "%q is not a number of pods or a percentage (0%%-100%%)", n.Value)
			return nil
		}
		s := intstr.FromString(n.Value)
		return &s
	}
	v, ok := d.int(n, path)
	if !ok {
		return nil
	}
	if v < 0 || v > math.MaxInt32 {
		d.errAt(n, path, "%d is not a number of pods (0 or more)", v)
		return nil
	}
	i := intstr.FromInt32(int32(v))
	return &i
}

func (d *decoder) probes(n *yaml.Node, path string) Probes {
	var out Probes
	m, ok := d.mapping(n, path, probesFields)
	if !ok {
		return out
	}
	field(m, path, "liveness", &out.Liveness, d.checkProbe)
	field(m, path, "startup", &out.Startup, d.checkProbe)
	return out
}

func (d *decoder) checkProbe(n *yaml.Node, path string) *CheckProbe {
	pr, m := d.probeOf(n, path, checkProbeFields)
	if pr == nil {
		return nil
	}
	out := &CheckProbe{Probe: *pr, Period: DefaultProbePeriod, Failures: DefaultProbeFailures}
	fieldOK(m, path, "period", &out.Period, d.seconds)
	if v := m["failures"]; v != nil {
		if f, ok := d.int(v, path+".failures"); ok {
			if f < 1 || f > math.MaxInt32 {
				d.errAt(deref(v), path+".failures", "failures %d is not 1 or more", f)
			} else {
				out.Failures = int32(f)
			}
		}
	}
	return out
}
