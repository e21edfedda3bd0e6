package secrets

import (
	"errors"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/spec"
)

// CheckReferences fails a plan when an env variable or a mounted file of a node or a role
// names a Secret or ConfigMap of the namespace that does not exist, or a key it lacks (SPEC
// §3a): found now, not by a pod stuck in CreateContainerConfigError. objects holds the
// namespace's Secrets and ConfigMaps (values blanked, keys kept); the config: and secrets:
// of the nodes and roles are made by the apply and need no check.
func CheckReferences(g *spec.Group, ns string, objects ...map[plan.Key]plan.Object) error {
	lookup := func(kind, name string) plan.Object {
		for _, m := range objects {
			if u := m[plan.Key{Kind: kind, Namespace: ns, Name: name}]; u != nil {
				return u
			}
		}
		return nil
	}
	var errs []error
	check := func(who string, in *spec.PodInputs, what string, line int, secret, config, key string) {
		kind, name := "Secret", secret
		if _, own := in.OwnSecret(secret); secret == "" || own {
			kind, name = "ConfigMap", config
			if _, own := in.OwnConfig(config); config == "" || own {
				return
			}
		}
		where := fmt.Sprintf("%s:%d", g.File, line)
		u := lookup(kind, name)
		if u == nil {
			errs = append(errs, fmt.Errorf("node %s: %s: %s %s does not exist in namespace %s (%s)", who, what, kind, name, ns, where))
			return
		}
		if key == "" {
			return
		}
		if !hasDataKey(u, key) {
			errs = append(errs, fmt.Errorf("node %s: %s: %s %s has no key %s (%s)", who, what, kind, name, key, where))
		}
	}
	checkInputs := func(who string, in *spec.PodInputs) {
		for _, v := range sortedRefNames(in.EnvRefs) {
			r := in.EnvRefs[v]
			check(who, in, "env "+v, r.Line, r.Secret, r.Config, r.Key)
		}
		for _, f := range in.Files {
			check(who, in, "files "+f.Path, f.Line, f.Secret, f.Config, "")
		}
	}
	for _, n := range g.Nodes {
		checkInputs(n.Name, &n.PodInputs)
		for _, r := range n.Roles {
			// A role that takes the node's env and files has the node's references: checked once.
			if !sameRefs(r, n) {
				checkInputs(n.Name+": role "+r.Name, &r.PodInputs)
			}
		}
	}
	return errors.Join(errs...)
}

// sameRefs reports whether role r reads exactly the node's env references and files, each
// meaning the same object.
func sameRefs(r *spec.Role, n *spec.Node) bool {
	if len(r.EnvRefs) != len(n.EnvRefs) || len(r.Files) != len(n.Files) {
		return false
	}
	for k, ref := range r.EnvRefs {
		nr, ok := n.EnvRefs[k]
		if !ok || nr != ref || r.ObjectName(ref.Secret, ref.Config) != n.ObjectName(ref.Secret, ref.Config) {
			return false
		}
	}
	for i, f := range r.Files {
		if f != n.Files[i] || r.ObjectName(f.Secret, f.Config) != n.ObjectName(f.Secret, f.Config) {
			return false
		}
	}
	return true
}

func sortedRefNames(m map[string]spec.EnvRef) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// hasDataKey reports whether the Secret or ConfigMap o has key among its data or binary data.
func hasDataKey(o plan.Object, key string) bool {
	switch t := o.(type) {
	case *corev1.Secret:
		_, ok := t.Data[key]
		return ok
	case *corev1.ConfigMap:
		_, inData := t.Data[key]
		_, inBinary := t.BinaryData[key]
		return inData || inBinary
	case *unstructured.Unstructured:
		data, _ := t.Object["data"].(map[string]any)
		binary, _ := t.Object["binaryData"].(map[string]any)
		_, inData := data[key]
		_, inBinary := binary[key]
		return inData || inBinary
	}
	return false
}
