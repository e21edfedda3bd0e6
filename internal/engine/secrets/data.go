package secrets

import (
	"encoding/base64"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/spec"
)

// WithData returns p with the values of each Secret slipway makes, read now from the
// sources the group file names (SPEC §3a). The plan, saved or not, holds the Secret without
// data and the hash of its values; a value that no longer hashes to the plan's is refused, so
// that apply writes what the plan showed. p itself is not changed: the values stay in this
// run's memory.
func WithData(p *plan.Plan, g *spec.Group) (*plan.Plan, error) {
	if p.SecretKey == nil && g.HasOwnSecrets() {
		return nil, fmt.Errorf("group %s: the plan has no secret key to check the values of its secrets with: plan again", g.Name)
	}
	var out *plan.Plan
	var errs []error
	for i, d := range p.Desired {
		if d.GetKind() != "Secret" {
			continue
		}
		want, ok := d.GetAnnotations()[spec.AnnotationSecretHash]
		if !ok {
			continue
		}
		filled, err := secretData(d, want, g, p.SecretKey)
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
func secretData(d *unstructured.Unstructured, want string, g *spec.Group, key []byte) (*unstructured.Unstructured, error) {
	node := d.GetLabels()[spec.LabelNode]
	who := node
	if role := d.GetLabels()[spec.LabelRole]; role != "" {
		who += ": role " + role
	}
	src, found := madeSecret(g.Node(node), d.GetName())
	if !found {
		return nil, fmt.Errorf("node %s: Secret %s: the group file no longer has its secret: plan again", who, d.GetName())
	}
	values, err := spec.ReadSecret(who, src)
	if err != nil {
		return nil, err
	}
	if spec.KeyedHash(key, spec.SecretHash(d.GetName(), values)) != want {
		return nil, fmt.Errorf("node %s: secret %s: its values changed since the plan was made: plan again", who, src.Name)
	}
	data := make(map[string]any, len(values))
	for k, v := range values {
		data[k] = base64.StdEncoding.EncodeToString([]byte(v))
	}
	out := d.DeepCopy()
	out.Object["data"] = data
	return out, nil
}

// madeSecret is the secrets: entry of node n or of one of its roles that makes Secret name.
func madeSecret(n *spec.Node, name string) (spec.SecretSource, bool) {
	if n == nil {
		return spec.SecretSource{}, false
	}
	inputs := []*spec.PodInputs{&n.PodInputs}
	for _, r := range n.Roles {
		inputs = append(inputs, &r.PodInputs)
	}
	for _, in := range inputs {
		for _, s := range in.Secrets {
			if s.Object == name {
				return s, true
			}
		}
	}
	return spec.SecretSource{}, false
}
