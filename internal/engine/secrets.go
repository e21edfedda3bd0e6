package engine

import (
	"encoding/base64"
	"errors"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"slipway.dev/slipway/internal/kube"
	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/spec"
)

// withSecretData returns p with the values of each Secret slipway makes, read now from the
// sources the group file names (SPEC §3a). The plan, saved or not, holds the Secret without
// data and the hash of its values; a value that no longer hashes to the plan's is refused, so
// that apply writes what the plan showed. p itself is not changed: the values stay in this
// run's memory.
func withSecretData(p *plan.Plan, g *spec.Group) (*plan.Plan, error) {
	var out *plan.Plan
	var errs []error
	for i, d := range p.Desired {
		want, ok := d.GetAnnotations()[spec.AnnotationSecretHash]
		if d.GetKind() != "Secret" || !ok {
			continue
		}
		filled, err := secretData(d, want, g)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if out == nil {
			cp := *p
			cp.Desired = append([]*unstructured.Unstructured(nil), p.Desired...)
			out = &cp
		}
		out.Desired[i] = filled
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if out == nil {
		return p, nil
	}
	return out, nil
}

// secretData is a copy of the rendered Secret d with its values, checked against want.
func secretData(d *unstructured.Unstructured, want string, g *spec.Group) (*unstructured.Unstructured, error) {
	node := d.GetLabels()[spec.LabelNode]
	n := g.Node(node)
	var src spec.SecretSource
	found := false
	if n != nil {
		for _, s := range n.Secrets {
			if spec.ObjectName(n.Name, s.Name) == d.GetName() {
				src, found = s, true
			}
		}
	}
	if !found {
		return nil, fmt.Errorf("node %s: Secret %s: the group file no longer has its secret: plan again", node, d.GetName())
	}
	values, err := spec.ReadSecret(node, src)
	if err != nil {
		return nil, err
	}
	if spec.SecretHash(d.GetName(), values) != want {
		return nil, fmt.Errorf("node %s: secret %s: its values changed since the plan was made: plan again", node, src.Name)
	}
	data := make(map[string]any, len(values))
	for k, v := range values {
		data[k] = base64.StdEncoding.EncodeToString([]byte(v))
	}
	out := d.DeepCopy()
	out.Object["data"] = data
	return out, nil
}

// checkReferences fails a plan when an env variable or a mounted file names a Secret or
// ConfigMap of the namespace that does not exist, or a key it lacks (SPEC §3a): found now,
// not by a pod stuck in CreateContainerConfigError. objects holds the namespace's Secrets
// and ConfigMaps (values blanked, keys kept); a node's own config: and secrets: are made by
// the apply and need no check.
func checkReferences(g *spec.Group, ns string, objects ...map[kube.Key]*unstructured.Unstructured) error {
	lookup := func(kind, name string) *unstructured.Unstructured {
		for _, m := range objects {
			if u := m[kube.Key{Kind: kind, Namespace: ns, Name: name}]; u != nil {
				return u
			}
		}
		return nil
	}
	var errs []error
	check := func(n *spec.Node, what string, line int, secret, config, key string) {
		kind, name := "Secret", secret
		if _, own := n.OwnSecret(secret); secret == "" || own {
			kind, name = "ConfigMap", config
			if _, own := n.OwnConfig(config); config == "" || own {
				return
			}
		}
		where := fmt.Sprintf("%s:%d", g.File, line)
		u := lookup(kind, name)
		if u == nil {
			errs = append(errs, fmt.Errorf("node %s: %s: %s %s does not exist in namespace %s (%s)", n.Name, what, kind, name, ns, where))
			return
		}
		if key == "" {
			return
		}
		data, _ := u.Object["data"].(map[string]any)
		binary, _ := u.Object["binaryData"].(map[string]any)
		if _, ok := data[key]; !ok {
			if _, ok := binary[key]; !ok {
				errs = append(errs, fmt.Errorf("node %s: %s: %s %s has no key %s (%s)", n.Name, what, kind, name, key, where))
			}
		}
	}
	for _, n := range g.Nodes {
		for _, v := range sortedRefNames(n.EnvRefs) {
			r := n.EnvRefs[v]
			check(n, "env "+v, r.Line, r.Secret, r.Config, r.Key)
		}
		for _, f := range n.Files {
			check(n, "files "+f.Path, f.Line, f.Secret, f.Config, "")
		}
	}
	return errors.Join(errs...)
}

func sortedRefNames(m map[string]spec.EnvRef) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
