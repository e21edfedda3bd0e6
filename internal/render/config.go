package render

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"slipway.dev/slipway/internal/spec"
)

// configObjects are the ConfigMaps and Secrets the config: and secrets: of a node and of its
// roles make. A Secret is rendered without its data, only the keyed hash of its values: the
// values are read when slipway applies, so that they are in no plan, rendered file or state
// (SPEC §3a), and the hash is keyed so that no reader can test a guess of them (issue 35).
func (r *renderer) configObjects(n *spec.Node) []Object {
	out := r.inputObjects(&n.PodInputs, r.labels(spec.LabelNode, n.Name))
	for _, role := range n.Roles {
		out = append(out, r.inputObjects(&role.PodInputs, r.labels(spec.LabelNode, n.Name, spec.LabelRole, role.Name))...)
	}
	return out
}

// inputObjects are the objects one node's or role's own config: and secrets: make.
func (r *renderer) inputObjects(in *spec.PodInputs, labels map[string]string) []Object {
	var out []Object
	for _, c := range in.Config {
		out = append(out, &corev1.ConfigMap{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: r.meta(c.Object, maps.Clone(labels)),
			Data:       maps.Clone(c.Data),
		})
	}
	for _, s := range in.Secrets {
		meta := r.meta(s.Object, maps.Clone(labels))
		meta.Annotations = map[string]string{spec.AnnotationSecretHash: spec.KeyedHash(r.in.SecretKey, s.Hash)}
		out = append(out, &corev1.Secret{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
			ObjectMeta: meta,
			Type:       corev1.SecretTypeOpaque,
		})
	}
	return out
}

// podConfig adds the env references and mounted files of a node or role to its container,
// and returns the hash of the content it uses of the objects slipway makes ("" when none),
// for the pod template.
func (r *renderer) podConfig(ps *corev1.PodSpec, c *corev1.Container, in *spec.PodInputs) string {
	// "config/<name>" or "secret/<name>" → content hash. A name means one object in a pod,
	// and keys as they were before roles had their own keep running pods' hashes as they are.
	used := map[string]string{}
	use := func(secret, config string) {
		if s, own := in.OwnSecret(secret); secret != "" && own {
			used["secret/"+secret] = spec.KeyedHash(r.in.SecretKey, s.Hash)
		}
		if cf, own := in.OwnConfig(config); config != "" && own {
			used["config/"+config] = spec.ConfigHash(cf.Data)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(in.EnvRefs)) {
		ref := in.EnvRefs[k]
		name := in.ObjectName(ref.Secret, ref.Config)
		src := &corev1.EnvVarSource{}
		if ref.Secret != "" {
			src.SecretKeyRef = &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: ref.Key}
		} else {
			src.ConfigMapKeyRef = &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: ref.Key}
		}
		c.Env = append(c.Env, corev1.EnvVar{Name: k, ValueFrom: src})
		use(ref.Secret, ref.Config)
	}
	for i, f := range in.Files {
		vol := corev1.Volume{Name: fmt.Sprintf("files-%d", i)}
		name := in.ObjectName(f.Secret, f.Config)
		if f.Secret != "" {
			vol.Secret = &corev1.SecretVolumeSource{SecretName: name}
		} else {
			vol.ConfigMap = &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: name}}
		}
		ps.Volumes = append(ps.Volumes, vol)
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: vol.Name, MountPath: f.Path, ReadOnly: true})
		use(f.Secret, f.Config)
	}
	if len(used) == 0 {
		return ""
	}
	h := sha256.New()
	for _, k := range slices.Sorted(maps.Keys(used)) {
		fmt.Fprintf(h, "%s=%s\n", k, used[k])
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// setConfigHash puts the hash of the config a pod uses on its template, after workload()
// set the file's annotations.
func setConfigHash(t *corev1.PodTemplateSpec, hash string) {
	if hash == "" {
		return
	}
	if t.Annotations == nil {
		t.Annotations = map[string]string{}
	}
	t.Annotations[spec.AnnotationConfigHash] = hash
}
