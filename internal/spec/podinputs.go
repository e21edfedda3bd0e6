package spec

import (
	"maps"
	"slices"

	"go.yaml.in/yaml/v3"
)

// PodInputs are what the containers of a node or a role read besides their image (SPEC §3a):
// environment variables, literal or from a key of a Secret or ConfigMap, mounted files, and
// the ConfigMaps and Secrets slipway makes for them.
type PodInputs struct {
	Env     map[string]string
	EnvRefs map[string]EnvRef // variables read from a Secret's or ConfigMap's key
	Files   []FileMount       // Secrets and ConfigMaps mounted read-only
	Config  []ConfigSource    // the ConfigMaps slipway makes for this node or role, by name
	Secrets []SecretSource    // the Secrets slipway makes for this node or role, by name
	// Outer is a role's node's: a name the role's own config:/secrets: lack means the node's
	// entry of that name, if any. nil for a node.
	Outer *PodInputs
}

// OwnConfig returns the config: entry a reference to name means (the role's own, else its
// node's); false means an existing ConfigMap of the namespace.
func (in *PodInputs) OwnConfig(name string) (ConfigSource, bool) {
	for p := in; p != nil; p = p.Outer {
		if i := slices.IndexFunc(p.Config, func(c ConfigSource) bool { return c.Name == name }); i >= 0 {
			return p.Config[i], true
		}
	}
	return ConfigSource{}, false
}

// OwnSecret returns the secrets: entry a reference to name means, as OwnConfig.
func (in *PodInputs) OwnSecret(name string) (SecretSource, bool) {
	for p := in; p != nil; p = p.Outer {
		if i := slices.IndexFunc(p.Secrets, func(s SecretSource) bool { return s.Name == name }); i >= 0 {
			return p.Secrets[i], true
		}
	}
	return SecretSource{}, false
}

// ObjectName is the object a reference names: a ConfigMap or Secret slipway makes, or else
// the existing object of that name. Exactly one of secret and config is set.
func (in *PodInputs) ObjectName(secret, config string) string {
	if secret != "" {
		if s, own := in.OwnSecret(secret); own {
			return s.Object
		}
		return secret
	}
	if c, own := in.OwnConfig(config); own {
		return c.Object
	}
	return config
}

// inputsSet records which of the pod inputs a role wrote.
type inputsSet struct{ env, secrets, config bool }

// podInputs decodes a node's or a role's env, config and secrets; owner prefixes the names of
// the objects made ("" while decoding defaults:, whose secrets are read per node).
func (d *decoder) podInputs(m map[string]*yaml.Node, path, owner string, in *PodInputs) inputsSet {
	var set inputsSet
	if v := m["env"]; v != nil {
		in.Env, set.env = d.env(v, path+".env", &in.EnvRefs), true
	}
	if v := m["config"]; v != nil {
		in.Config, set.config = d.configs(v, path+".config", owner), true
	}
	if v := m["secrets"]; v != nil {
		in.Secrets, set.secrets = d.secrets(v, path+".secrets", owner), true
	}
	return set
}

// inheritInputs gives role r the node's env when r wrote none and runs the node's image, and
// the node's files; r's references name the node's config and secrets besides its own.
func inheritInputs(r *Role, set inputsSet, n *Node) {
	r.Outer = &n.PodInputs
	if r.Service != nil {
		return
	}
	if !set.env {
		r.Env, r.EnvRefs = maps.Clone(n.Env), maps.Clone(n.EnvRefs)
	}
	r.Files = slices.Clone(n.Files)
}

// validateServiceEnv refuses a variable that a service role sets twice, in its env and in its
// service's environment.
func (d *decoder) validateServiceEnv(r *Role, path string) {
	if r.Service == nil {
		return
	}
	for _, k := range slices.Sorted(maps.Keys(r.Service.Environment)) {
		_, lit := r.Env[k]
		_, ref := r.EnvRefs[k]
		if lit || ref {
			d.errPath(path+".env."+k, "%s is also in service.environment: set it once", k)
		}
	}
}

// inputObjects are the ConfigMaps and Secrets the inputs make, for the name checks.
func inputObjects(in *PodInputs) []derived {
	var out []derived
	for _, c := range in.Config {
		out = append(out, derived{"ConfigMap", c.Object})
	}
	for _, s := range in.Secrets {
		out = append(out, derived{"Secret", s.Object})
	}
	return out
}
