package spec

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Workload holds the fields of SPEC §3a that a node and each of its roles carry.
type Workload struct {
	Labels      map[string]string // on the pods, beside slipway's own labels
	Annotations map[string]string // on the pods
	Placement   Placement
	// Disruption of a node: nil means no PodDisruptionBudget for its one pod (it would block
	// drains). Of a role: the budget of a role with 2 or more replicas; nil means
	// DefaultDisruption.
	Disruption *Disruption
	Probes     Probes
}

// Placement is where the pods may run. NodeSelector, Tolerations and Affinity are passed to
// the pod as written; the API server's dry run judges them.
type Placement struct {
	NodeSelector map[string]string
	Tolerations  []corev1.Toleration
	Affinity     *corev1.Affinity
	// Spread spreads a role of more than one replica over zones and hosts (ScheduleAnyway).
	Spread bool
}

// Disruption is a PodDisruptionBudget: exactly one of MaxUnavailable and MinAvailable is set.
type Disruption struct {
	MaxUnavailable *intstr.IntOrString
	MinAvailable   *intstr.IntOrString
}

// DefaultDisruption is the budget of a role with 2 or more replicas that sets none.
func DefaultDisruption() *Disruption {
	one := intstr.FromInt32(1)
	return &Disruption{MaxUnavailable: &one}
}

// Probes are the checks beside readiness; nil when not set.
type Probes struct {
	Liveness, Startup *CheckProbe
}

// CheckProbe is a liveness or startup probe: a Probe, how often it runs and how many failures
// in a row count.
type CheckProbe struct {
	Probe
	Period   time.Duration // whole seconds
	Failures int32
}

// Defaults of a CheckProbe (Kubernetes' own).
const (
	DefaultProbePeriod   = 10 * time.Second
	DefaultProbeFailures = 3
)

// DefaultStopGracePeriod is Kubernetes' terminationGracePeriodSeconds when none is set.
const DefaultStopGracePeriod = 30 * time.Second

// reservedLabelPrefix is slipway's own domain: a label or annotation under it is slipway's.
const reservedLabelPrefix = "slipway.dev/"

// reservedLabels are slipway's labels outside its domain (SPEC §5).
var reservedLabels = []string{LabelManagedBy, LabelName}
