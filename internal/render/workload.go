package render

import (
	"maps"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"slipway.dev/slipway/internal/spec"
)

// Topology keys a role's replicas spread over (SPEC §3a), widest first.
var spreadKeys = []string{"topology.kubernetes.io/zone", "kubernetes.io/hostname"}

// workload puts the fields of SPEC §3a on a Deployment's pods: the labels and annotations of
// the node or role (slipway's own labels win; the loader refuses a clash), placement, the
// probes beside readiness, and how the pod stops.
func workload(d *appsv1.Deployment, n *spec.Node, w spec.Workload) {
	t := &d.Spec.Template
	if len(w.Labels) > 0 {
		labels := maps.Clone(w.Labels)
		maps.Copy(labels, t.Labels)
		t.Labels = labels
	}
	if len(w.Annotations) > 0 {
		t.Annotations = maps.Clone(w.Annotations)
	}
	ps := &t.Spec
	p := w.Placement
	if len(p.NodeSelector) > 0 {
		ps.NodeSelector = maps.Clone(p.NodeSelector)
	}
	for _, tol := range p.Tolerations {
		ps.Tolerations = append(ps.Tolerations, *tol.DeepCopy())
	}
	ps.Affinity = p.Affinity.DeepCopy()
	if p.Spread && d.Spec.Replicas != nil && *d.Spec.Replicas > 1 {
		ps.TopologySpreadConstraints = spread(d.Spec.Selector)
	}
	if n.StopGracePeriod > 0 {
		s := int64(n.StopGracePeriod.Seconds())
		ps.TerminationGracePeriodSeconds = &s
	}
	for i := range ps.Containers {
		c := &ps.Containers[i]
		if w.Probes.Liveness != nil {
			c.LivenessProbe = checkProbe(w.Probes.Liveness)
		}
		if w.Probes.Startup != nil {
			c.StartupProbe = checkProbe(w.Probes.Startup)
		}
		if n.PreStopSleep > 0 {
			if c.Lifecycle == nil {
				c.Lifecycle = &corev1.Lifecycle{}
			}
			c.Lifecycle.PreStop = &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: int64(n.PreStopSleep.Seconds())}}
		}
	}
	if n.TmpSize != nil {
		for i := range ps.Volumes {
			if ed := ps.Volumes[i].EmptyDir; ed != nil && ed.Medium == corev1.StorageMediumMemory {
				q := n.TmpSize.DeepCopy()
				ed.SizeLimit = &q
			}
		}
	}
}

// spread asks the scheduler to spread the replicas over zones and hosts without refusing to
// schedule a pod (a cluster of one zone or one host still runs them). pod-template-hash keeps
// a rollout's old pods out of the count.
func spread(sel *metav1.LabelSelector) []corev1.TopologySpreadConstraint {
	out := make([]corev1.TopologySpreadConstraint, len(spreadKeys))
	for i, key := range spreadKeys {
		out[i] = corev1.TopologySpreadConstraint{
			MaxSkew:           1,
			TopologyKey:       key,
			WhenUnsatisfiable: corev1.ScheduleAnyway,
			LabelSelector:     sel.DeepCopy(),
			MatchLabelKeys:    []string{appsv1.DefaultDeploymentUniqueLabelKey},
		}
	}
	return out
}

func checkProbe(p *spec.CheckProbe) *corev1.Probe {
	pr := probe(&p.Probe)
	pr.PeriodSeconds = int32(p.Period.Seconds())
	pr.FailureThreshold = p.Failures
	return pr
}

// budget is the PodDisruptionBudget of a node's or a role's pods, named and selecting as its
// Deployment.
func (r *renderer) budget(name string, labels map[string]string, d *spec.Disruption) *policyv1.PodDisruptionBudget {
	return &policyv1.PodDisruptionBudget{
		TypeMeta:   metav1.TypeMeta{APIVersion: "policy/v1", Kind: "PodDisruptionBudget"},
		ObjectMeta: r.meta(name, labels),
		Spec: policyv1.PodDisruptionBudgetSpec{
			Selector:       &metav1.LabelSelector{MatchLabels: r.podsOf(name)},
			MaxUnavailable: d.MaxUnavailable,
			MinAvailable:   d.MinAvailable,
		},
	}
}

// budgets are the PodDisruptionBudgets of a node: its main pod's only when the file sets one
// (one replica: a budget would block drains), each role's with 2 or more replicas.
func (r *renderer) budgets(n *spec.Node) []Object {
	var out []Object
	if n.Disruption != nil {
		out = append(out, r.budget(n.Name, r.labels(spec.LabelNode, n.Name), n.Disruption))
	}
	for _, role := range n.Roles {
		if role.Replicas < 2 {
			continue
		}
		d := role.Disruption
		if d == nil {
			d = spec.DefaultDisruption()
		}
		out = append(out, r.budget(spec.RoleObjectName(n.Name, role.Name), r.labels(spec.LabelNode, n.Name, spec.LabelRole, role.Name), d))
	}
	return out
}

// RunningImage is the image a pod of containers cs runs: its node's or its service's
// container's, else the first one's ("" without containers). Status, rollback and the roles'
// gate read a live Deployment's image through it.
func RunningImage(cs []corev1.Container) string {
	for _, c := range cs {
		if c.Name == ContainerNode || c.Name == ContainerService {
			return c.Image
		}
	}
	if len(cs) > 0 {
		return cs[0].Image
	}
	return ""
}
