package spec

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"os"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// SecretHash is the digest of a Secret's values, salted with the object's name. It is not
// keyed: whoever has it can test a guess of a value offline, so it stays in memory; what
// slipway writes out is KeyedHash of it.
func SecretHash(object string, data map[string]string) string {
	return hashData("secret/"+object, data)
}

// KeyedHash is what slipway shows of a Secret's values (its annotation, the config hash of
// the pods that use it, plans and rendered files): an HMAC-SHA256 of their digest
// (SecretHash) under the group's secret key, which lives in the state, so that no reader of a
// Deployment, a plan or a rendered file can test a guess of a value (issue 35 item 5).
func KeyedHash(key []byte, digest string) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(digest))
	return "hmac-sha256:" + hex.EncodeToString(m.Sum(nil))
}

// SecretKeyBytes is the length of a group's secret key.
const SecretKeyBytes = 32

// HasOwnSecrets reports whether a node or a role of g has a secrets: entry: a Secret slipway
// makes, whose hash needs the group's secret key.
func (g *Group) HasOwnSecrets() bool {
	for _, n := range g.Nodes {
		if len(n.Secrets) > 0 {
			return true
		}
		for _, r := range n.Roles {
			if len(r.Secrets) > 0 {
				return true
			}
		}
	}
	return false
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
