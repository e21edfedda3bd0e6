package spec

import (
	"maps"
	"os"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// SecretHash is the hash of a Secret's values, salted with the object's name so that the
// same value in two Secrets does not show as the same hash.
func SecretHash(object string, data map[string]string) string {
	return hashData("secret/"+object, data)
}

// ReadSecret reads the values of s from the environment and files, now. An error names the
// variable or the file, never a value.
func ReadSecret(node string, s SecretSource) (map[string]string, error) {
	out := make(map[string]string, len(s.FromEnv)+len(s.FromFile))
	var missing []string
	for _, k := range slices.Sorted(maps.Keys(s.FromEnv)) {
		v, ok := os.LookupEnv(s.FromEnv[k])
		if !ok {
			missing = append(missing, "environment variable "+s.FromEnv[k]+" is not set")
			continue
		}
		out[k] = v
	}
	for _, k := range slices.Sorted(maps.Keys(s.FromFile)) {
		b, err := os.ReadFile(s.FromFile[k])
		if err != nil {
			missing = append(missing, "file "+s.FromFile[k]+": "+unwrapPath(err).Error())
			continue
		}
		out[k] = string(b)
	}
	if len(missing) > 0 {
		return nil, &secretError{node: node, name: s.Name, causes: missing}
	}
	return out, nil
}

type secretError struct {
	node, name string
	causes     []string
}

func (e *secretError) Error() string {
	return "node " + e.node + ": secret " + e.name + ": " + strings.Join(e.causes, "; ")
}

// secrets decodes `secrets:` and reads each value once, to check it is there and to hash it;
// a missing variable or file is an error naming it, before any change. The Secrets are named
// <owner>-<name>; owner "" (defaults:) reads nothing.
func (d *decoder) secrets(n *yaml.Node, path, owner string) []SecretSource {
	var out []SecretSource
	for _, ne := range d.namedEntries(n, path, secretFields) {
		e, p, m := ne.entry, ne.path, ne.fields
		s := SecretSource{Name: e.key, Object: objectOf(owner, e.key), FromEnv: map[string]string{}, FromFile: map[string]string{}, Line: e.keyNode.Line}
		data := map[string]string{}
		for _, f := range d.dataEntries(m["fromEnv"], p+".fromEnv") {
			fp, name := f.path, f.value
			if !envName.MatchString(name) {
				d.errAt(deref(f.val), fp, "%q is not an environment variable name (letters, digits, '_', '-' and '.', not starting with a digit)", name)
				continue
			}
			s.FromEnv[f.key] = name
			if v, set := os.LookupEnv(name); set {
				data[f.key] = v
			} else if owner != "" {
				// add, not errAt: a secret taken from defaults: is read (and missed) per node.
				d.add(deref(f.val).Line, fp, "environment variable %s is not set", name)
			}
		}
		for _, f := range d.dataEntries(m["fromFile"], p+".fromFile") {
			fp, src := f.path, f.value
			if _, dup := s.FromEnv[f.key]; dup {
				d.errAt(f.keyNode, fp, "key %s is also in fromEnv", f.key)
				continue
			}
			abs := d.resolve(src)
			s.FromFile[f.key] = abs
			if b, err := os.ReadFile(abs); err == nil {
				data[f.key] = string(b)
			} else if owner != "" {
				d.add(deref(f.val).Line, fp, "file %s cannot be read: %v", shown(src), unwrapPath(err))
			}
		}
		if len(s.FromEnv)+len(s.FromFile) == 0 && m["fromEnv"] == nil && m["fromFile"] == nil {
			d.lacks(deref(e.val), p, "", "needs fromEnv or fromFile")
		}
		s.Hash = SecretHash(s.Object, data)
		out = append(out, s)
	}
	return out
}
