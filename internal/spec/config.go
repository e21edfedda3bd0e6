package spec

import (
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"os"
	"path"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/util/validation"
)

// EnvRef is an environment variable read from a key of a Secret or ConfigMap: exactly one of
// Secret and Config is set. A name that is one of the node's own secrets:/config: is the
// object slipway makes (ObjectName); any other is an existing object of the namespace.
type EnvRef struct {
	Secret, Config, Key string
	Line                int // where it was written, for errors about it
}

// FileMount mounts a Secret or a ConfigMap read-only at Path, every key a file: exactly one
// of Secret and Config is set, named as in EnvRef.
type FileMount struct {
	Path, Secret, Config string
	Line                 int
}

// ConfigSource is a ConfigMap <node>-<name> (a role's: <node>-<role>-<name>) slipway makes
// from files of the group directory.
type ConfigSource struct {
	Name   string
	Object string            // the ConfigMap's name
	Files  map[string]string // key → absolute path of the file
	Data   map[string]string // key → the file's content, read at load
}

// SecretSource is a Secret <node>-<name> slipway makes from the operator's environment or
// files at run time. It holds where the values come from and a hash of them, never a value.
type SecretSource struct {
	Name     string
	Object   string            // the Secret's name
	FromEnv  map[string]string // key → environment variable
	FromFile map[string]string // key → absolute path
	Hash     string            // SecretHash of the values read at load: unkeyed, never written out (KeyedHash is)
	Line     int
}

// ObjectName is the ConfigMap or Secret slipway makes for the node's config:/secrets: entry.
func ObjectName(node, name string) string { return node + "-" + name }

// ConfigHash is the hash of a ConfigMap's data; a pod template carries it so that a content
// change rolls the pods out.
func ConfigHash(data map[string]string) string { return hashData("config", data) }

// hashData hashes sorted key/value pairs with a domain prefix; keys and values are
// length-prefixed so that no two different maps hash alike.
func hashData(domain string, data map[string]string) string {
	h := sha256.New()
	h.Write([]byte(domain))
	for _, k := range slices.Sorted(maps.Keys(data)) {
		for _, s := range []string{k, data[k]} {
			var n [8]byte
			for i, l := 0, uint64(len(s)); i < 8; i++ {
				n[i] = byte(l >> (8 * i))
			}
			h.Write(n[:])
			h.Write([]byte(s))
		}
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// maxConfigBytes is what one ConfigMap may hold (the API server's limit on an object is 1 MiB,
// with its metadata).
const maxConfigBytes = 1000 * 1024

// namedEntry is one entry of a config: or secrets: section, its fields decoded.
type namedEntry struct {
	entry
	path   string
	fields map[string]*yaml.Node
}

// namedEntries decodes the entries of a section whose keys name objects (DNS labels) and whose
// values are mappings of known fields; an entry whose value is no such mapping is left out
// (its error recorded).
func (d *decoder) namedEntries(n *yaml.Node, path string, known *section) []namedEntry {
	var out []namedEntry
	for _, e := range d.entries(n, path) {
		p := join(path, e.key)
		if !isLabel(e.key, false) {
			d.errAt(e.keyNode, p, "name %q is not a DNS label %s", e.key, labelRule)
		}
		if m, ok := d.mapping(e.val, p, known); ok {
			out = append(out, namedEntry{entry: e, path: p, fields: m})
		}
	}
	return out
}

// configs decodes `config:`: each entry a ConfigMap of files of the group directory, named
// <owner>-<name>.
func (d *decoder) configs(n *yaml.Node, path, owner string) []ConfigSource {
	var out []ConfigSource
	for _, ne := range d.namedEntries(n, path, configFields) {
		e, p, m := ne.entry, ne.path, ne.fields
		c := ConfigSource{Name: e.key, Object: objectOf(owner, e.key), Files: map[string]string{}, Data: map[string]string{}}
		size := 0
		for _, f := range d.dataEntries(m["files"], p+".files") {
			abs := d.addSource(deref(f.val), f.path, f.value)
			b, err := os.ReadFile(abs)
			if err != nil {
				if _, statErr := os.Lstat(abs); statErr == nil {
					d.errAt(deref(f.val), f.path, "%s cannot be read: %v", shown(f.value), unwrapPath(err))
				}
				continue
			}
			size += len(b)
			c.Files[f.key], c.Data[f.key] = abs, string(b)
		}
		if len(c.Files) == 0 && m["files"] == nil {
			d.lacks(deref(e.val), p, "files", "is required")
		}
		if size > maxConfigBytes {
			d.errAt(deref(e.val), p, "config %s holds %d bytes, more than a ConfigMap can (%d)", e.key, size, maxConfigBytes)
		}
		out = append(out, c)
	}
	return out
}

// dataEntry is an entry of a mapping of ConfigMap or Secret keys to strings (files:, fromEnv:,
// fromFile:), its value read.
type dataEntry struct {
	entry
	path, value string
}

// dataEntries decodes a mapping of ConfigMap or Secret keys to strings; an entry whose key is
// no such key or whose value is no string is left out (its error recorded).
func (d *decoder) dataEntries(n *yaml.Node, path string) []dataEntry {
	var out []dataEntry
	for _, e := range d.entries(n, path) {
		p := join(path, e.key)
		if !d.dataKey(e.keyNode, p, e.key) {
			continue
		}
		if s, ok := d.str(e.val, p); ok {
			out = append(out, dataEntry{entry: e, path: p, value: s})
		}
	}
	return out
}

// dataKey checks a key of a ConfigMap or Secret.
func (d *decoder) dataKey(n *yaml.Node, p, key string) bool {
	if len(validation.IsConfigMapKey(key)) > 0 {
		d.errAt(n, p, "%q is not a file name of a ConfigMap or Secret (letters, digits, '-', '_' and '.')", key)
		return false
	}
	return true
}

// envRef decodes an environment value that is a mapping: {secret: NAME, key: KEY} or
// {config: NAME, key: KEY}.
func (d *decoder) envRef(n *yaml.Node, p string) (EnvRef, bool) {
	m, ok := d.mapping(n, p, envRefFields)
	if !ok {
		return EnvRef{}, false
	}
	r := EnvRef{Line: deref(n).Line}
	r.Secret, r.Config, ok = d.objectRef(n, m, p)
	if kv := m["key"]; kv != nil {
		if k, ok2 := d.str(kv, p+".key"); ok2 && d.dataKey(deref(kv), p+".key", k) {
			r.Key = k
		} else {
			ok = false
		}
	} else {
		d.lacks(deref(n), p, "key", "is required")
		ok = false
	}
	return r, ok
}

// objectRef reads the one of secret: and config: that a reference writes.
func (d *decoder) objectRef(n *yaml.Node, m map[string]*yaml.Node, p string) (secret, config string, ok bool) {
	sv, cv := m["secret"], m["config"]
	switch {
	case sv != nil && cv != nil:
		d.errAt(deref(n), p, "sets both secret and config: name one")
		return "", "", false
	case sv == nil && cv == nil:
		d.lacks(deref(n), p, "", "needs secret or config")
		return "", "", false
	}
	field, v := "secret", sv
	if cv != nil {
		field, v = "config", cv
	}
	s, ok := d.str(v, p+"."+field)
	if !ok {
		return "", "", false
	}
	if !isSubdomain(s) {
		d.errAt(deref(v), p+"."+field, "%q is not a DNS subdomain (lowercase letters, digits, '-' and '.')", s)
		return "", "", false
	}
	if field == "secret" {
		return s, "", true
	}
	return "", s, true
}

// files decodes `files:`: mount paths are absolute, each once, and never /var/lib or under it
// (the state claim's). A path under /run or /tmp is fine (/run/secrets/app, SPEC §3a): the
// runtime mounts it over the directory's own mount, whatever the init; /run or /tmp itself is
// refused, as a read-only mount there would hide the directory every init writes to.
func (d *decoder) files(n *yaml.Node, p string) []FileMount {
	items, ok := d.seq(n, p)
	if !ok {
		return nil
	}
	var out []FileMount
	seen := map[string]int{}
	for i, it := range items {
		ip := index(p, i)
		m, ok := d.mapping(it, ip, fileFields)
		if !ok {
			continue
		}
		f := FileMount{Line: deref(it).Line}
		f.Secret, f.Config, ok = d.objectRef(it, m, ip)
		pv := m["path"]
		if pv == nil {
			d.lacks(deref(it), ip, "path", "is required")
			continue
		}
		s, ok2 := d.str(pv, ip+".path")
		if !ok || !ok2 {
			continue
		}
		clean := path.Clean(s)
		switch {
		case !strings.HasPrefix(s, "/"):
			d.errAt(deref(pv), ip+".path", "%q is not an absolute path", s)
		case clean == "/":
			d.errAt(deref(pv), ip+".path", "%q is the root: name a directory under it", s)
		case under(clean, "/var/lib"):
			d.errAt(deref(pv), ip+".path", "%s is under /var/lib, the node's state claim", s)
		case clean == "/run" || clean == "/tmp":
			d.errAt(deref(pv), ip+".path", "%s would hide the whole of %s, which the node writes to: mount it in a directory under it (e.g. %s/secrets/app)", s, clean, clean)
		case seen[clean] != 0:
			d.errAt(deref(pv), ip+".path", "path %s is mounted twice (first at line %d)", clean, seen[clean])
		default:
			seen[clean] = deref(pv).Line
			f.Path = clean
			out = append(out, f)
		}
	}
	return out
}

// under reports whether p is dir or below it.
func under(p, dir string) bool { return p == dir || strings.HasPrefix(p, dir+"/") }

// validateRefs checks that a reference to one of the config:/secrets: entries of a node or
// role names a key the entry has. Any other name is an existing object, checked by plan
// against the cluster.
func (d *decoder) validateRefs(in *PodInputs, path string) {
	for _, k := range slices.Sorted(maps.Keys(in.EnvRefs)) {
		r := in.EnvRefs[k]
		if c, own := in.OwnConfig(r.Config); r.Config != "" && own {
			if _, ok := c.Data[r.Key]; !ok {
				d.add(r.Line, path+".env."+k, "config %s has no key %s", r.Config, r.Key)
			}
		}
		if s, own := in.OwnSecret(r.Secret); r.Secret != "" && own {
			if _, ok := s.FromEnv[r.Key]; !ok {
				if _, ok := s.FromFile[r.Key]; !ok {
					d.add(r.Line, path+".env."+k, "secret %s has no key %s", r.Secret, r.Key)
				}
			}
		}
	}
}

// objectOf is ObjectName, or "" while decoding defaults: (no owner yet).
func objectOf(owner, name string) string {
	if owner == "" {
		return ""
	}
	return ObjectName(owner, name)
}

// Annotations slipway writes (in its own domain, which a file cannot set).
const (
	// AnnotationConfigHash on a pod template: a hash of the content of the ConfigMaps and
	// Secrets slipway makes that the pod mounts or reads, so a content change rolls it out.
	AnnotationConfigHash = "slipway.dev/config-hash"
	// AnnotationSecretHash on a Secret slipway makes: the hash of its values. The rendered
	// Secret has no data; the engine fills it at apply from the same sources.
	AnnotationSecretHash = "slipway.dev/secret-hash"
	// AnnotationAppliedHash on the top-level metadata of every object slipway applies: a hash
	// of the object as applied (without this annotation). A field slipway drops from an object
	// changes it, so the plan's cheap comparison, which only sees the fields it still wants,
	// finds the object changed and the server-side dry run shows the field's removal. Never
	// on a pod template: changing it restarts no pod.
	AnnotationAppliedHash = "slipway.dev/applied-hash"
)
