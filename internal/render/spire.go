package render

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"path"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"slipway.dev/slipway/internal/spec"
)

// Spire is what a group with `spire:` renders from besides the file, read at plan time
// (FR-016): the cluster's name on the server and the server's trust bundle.
type Spire struct {
	Cluster string // <kube-system UID>-<namespace>
	Bundle  string // PEM
}

// The environment a node's container gets to configure its SPIRE agent with.
const (
	EnvSpireServer      = "SLIPWAY_SPIRE_SERVER"         // host:port
	EnvSpireServerHost  = "SLIPWAY_SPIRE_SERVER_ADDRESS" // host
	EnvSpireServerPort  = "SLIPWAY_SPIRE_SERVER_PORT"    // port
	EnvSpireTrustDomain = "SLIPWAY_SPIRE_TRUST_DOMAIN"
	EnvSpireCluster     = "SLIPWAY_SPIRE_CLUSTER" // the k8s_psat cluster name
	EnvSpireToken       = "SLIPWAY_SPIRE_TOKEN"   // the projected token's path
	EnvSpireBundle      = "SLIPWAY_SPIRE_BUNDLE"  // the trust bundle's path
)

// SpireTokenSeconds is the life of a node's projected token; the kubelet renews it at 80 %.
const SpireTokenSeconds = 3600

const spireVolume = "spire"

// spireObjects are the group's own objects of the SPIRE lane: the account the server reviews
// tokens as, and the trust bundle (FR-016).
func (r *renderer) spireObjects() (accounts, configs []Object) {
	if r.in.Group.Spire == nil {
		return nil, nil
	}
	no := false
	sa := &corev1.ServiceAccount{
		TypeMeta:                     metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
		ObjectMeta:                   r.meta(spec.SpireServerAccount, r.labels()),
		AutomountServiceAccountToken: &no,
	}
	bundle := ""
	if r.in.Spire != nil {
		bundle = r.in.Spire.Bundle
	}
	cm := &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: r.meta(spec.SpireAgentConfigMap, r.labels()),
		Data:       map[string]string{spec.SpireBundleFile: bundle},
	}
	return []Object{sa}, []Object{cm}
}

// spirePod gives a node's main pod what its agent needs (FR-015): the projected token of its
// account for the audience spire-server, readable only by root, and the trust bundle beside
// it; the agent's settings in the environment (a new cluster name makes new pods); and a
// required anti-affinity against every agent pod of slipway's on the same kube node.
func (r *renderer) spirePod(d *appsv1.Deployment, n *spec.Node) {
	s := r.in.Group.Spire
	if s == nil {
		return
	}
	cluster := ""
	if r.in.Spire != nil {
		cluster = r.in.Spire.Cluster
	}
	t := &d.Spec.Template
	t.Labels[spec.LabelSpireAgent] = "true"
	ps := &t.Spec
	owner, public, life := int32(0o400), int32(0o444), int64(SpireTokenSeconds)
	dir := path.Dir(s.TokenPath)
	ps.Volumes = append(ps.Volumes, corev1.Volume{Name: spireVolume, VolumeSource: corev1.VolumeSource{
		Projected: &corev1.ProjectedVolumeSource{DefaultMode: &owner, Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{
				Audience: spec.SpireAudience, ExpirationSeconds: &life, Path: path.Base(s.TokenPath)}},
			{ConfigMap: &corev1.ConfigMapProjection{
				LocalObjectReference: corev1.LocalObjectReference{Name: spec.SpireAgentConfigMap},
				Items:                []corev1.KeyToPath{{Key: spec.SpireBundleFile, Path: spec.SpireBundleFile, Mode: &public}}}},
		}}}})
	host, port, _ := net.SplitHostPort(s.Server)
	c := &ps.Containers[0]
	c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: spireVolume, MountPath: dir, ReadOnly: true})
	c.Env = append(c.Env,
		corev1.EnvVar{Name: EnvSpireServer, Value: s.Server},
		corev1.EnvVar{Name: EnvSpireServerHost, Value: host},
		corev1.EnvVar{Name: EnvSpireServerPort, Value: port},
		corev1.EnvVar{Name: EnvSpireTrustDomain, Value: s.TrustDomain},
		corev1.EnvVar{Name: EnvSpireCluster, Value: cluster},
		corev1.EnvVar{Name: EnvSpireToken, Value: s.TokenPath},
		corev1.EnvVar{Name: EnvSpireBundle, Value: path.Join(dir, spec.SpireBundleFile)},
	)
	if ps.Affinity == nil {
		ps.Affinity = &corev1.Affinity{}
	}
	if ps.Affinity.PodAntiAffinity == nil {
		ps.Affinity.PodAntiAffinity = &corev1.PodAntiAffinity{}
	}
	aa := ps.Affinity.PodAntiAffinity
	aa.RequiredDuringSchedulingIgnoredDuringExecution = append(aa.RequiredDuringSchedulingIgnoredDuringExecution, SpireAntiAffinity(r.ns))
}

// spirePodLabel sets LabelSpirePod to a digest of the template without it: every change of
// the pod makes another value, and the node's alias entry follows it.
func spirePodLabel(t *corev1.PodTemplateSpec) error {
	delete(t.Labels, spec.LabelSpirePod)
	b, err := json.Marshal(t)
	if err != nil {
		return fmt.Errorf("label %s: %w", spec.LabelSpirePod, err)
	}
	sum := sha256.Sum256(b)
	t.Labels[spec.LabelSpirePod] = hex.EncodeToString(sum[:8])
	return nil
}

// SpireAntiAffinity keeps an agent pod of namespace ns off a kube node that runs another of
// slipway's, in any of slipway's namespaces. Only slipway's: a pod anyone labels
// slipway.dev/spire-agent=true in a namespace of their own must not take a spire node's
// kube node from it (plan names such pods).
//
// The term names ns itself besides the namespace selector (the same pods: ns is slipway's):
// kube-scheduler's queueing hint for a deleted pod (v1.37.2, interpodaffinity
// isSchedulableAfterAssignedPodChange) matches terms without evaluating a namespaceSelector,
// so with the selector alone an agent pod kept Pending by another was not tried again when
// that pod went, only by the unschedulable-pods sweep (up to 5 minutes; kubernetes issue
// 141953). Named, a pod of the deployment's own namespace that goes requeues it at once; one
// of another slipway namespace still waits for the sweep.
func SpireAntiAffinity(ns string) corev1.PodAffinityTerm {
	return corev1.PodAffinityTerm{
		LabelSelector:     &metav1.LabelSelector{MatchLabels: map[string]string{spec.LabelSpireAgent: "true"}},
		Namespaces:        []string{ns},
		NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{spec.LabelManagedBy: spec.ManagedBy}},
		TopologyKey:       corev1.LabelHostname,
	}
}
