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

// configObjects are the ConfigMaps and Secrets a node's config: and secrets: make. A Secret
// is rendered without its data, only the hash of its values: the values are read when
// slipway applies, so that they are in no plan, rendered file or state (SPEC §3a).
func (r *renderer) configObjects(n *spec.Node) []Object {
	var out []Object
	labels := func() map[string]string { return r.labels(spec.LabelNode, n.Name) }
	for _, c := range n.Config {
		out = append(out, &corev1.ConfigMap{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: r.meta(spec.ObjectName(n.Name, c.Name), labels()),
			Data:       maps.Clone(c.Data),
		})
	}
	for _, s := range n.Secrets {
		meta := r.meta(spec.ObjectName(n.Name, s.Name), labels())
		meta.Annotations = map[string]string{spec.AnnotationSecretHash: s.Hash}
		out = append(out, &corev1.Secret{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
			ObjectMeta: meta,
			Type:       corev1.SecretTypeOpaque,
		})
	}
	return out
}

// objectName is the object a reference names: the node's own (<node>-<name>) or an
// existing one of the namespace.
func objectName(n *spec.Node, secret, config string) string {
	if secret != "" {
		if _, own := n.OwnSecret(secret); own {
			return spec.ObjectName(n.Name, secret)
		}
		return secret
	}
	if _, own := n.OwnConfig(config); own {
		return spec.ObjectName(n.Name, config)
	}
	return config
}

// nodeConfig adds the node's env references and mounted files to a container of the node's
// image, and returns the hash of the content it uses of the objects slipway makes ("" when
// none), for the pod template.
func nodeConfig(ps *corev1.PodSpec, c *corev1.Container, n *spec.Node) string {
	used := map[string]string{} // "config/<name>" or "secret/<name>" → content hash
	use := func(secret, config string) {
		if s, own := n.OwnSecret(secret); secret != "" && own {
			used["secret/"+secret] = s.Hash
		}
		if cf, own := n.OwnConfig(config); config != "" && own {
			used["config/"+cf.Name] = spec.ConfigHash(cf.Data)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(n.EnvRefs)) {
		ref := n.EnvRefs[k]
		name := objectName(n, ref.Secret, ref.Config)
		src := &corev1.EnvVarSource{}
		if ref.Secret != "" {
			src.SecretKeyRef = &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: ref.Key}
		} else {
			src.ConfigMapKeyRef = &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: ref.Key}
		}
		c.Env = append(c.Env, corev1.EnvVar{Name: k, ValueFrom: src})
		use(ref.Secret, ref.Config)
	}
	for i, f := range n.Files {
		vol := corev1.Volume{Name: fmt.Sprintf("files-%d", i)}
		name := objectName(n, f.Secret, f.Config)
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
