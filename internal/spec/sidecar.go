package spec

import (
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"
	"text/template"
	"time"

	"go.yaml.in/yaml/v3"

	"slipway.dev/slipway/internal/secretsconf"
)

// Defaults of the secrets server (FR-004e).
const (
	DefaultSecretsAuthMount = "kubernetes"
	DefaultSecretsAudience  = "openbao"
	DefaultSecretsMount     = "secret"
	DefaultSecretsPoll      = 10 * time.Second
	EncodingBase64          = "base64"
	CompanionCommand        = "/bin/companion"
	SecretsDir              = "/run/secrets"
	secretsRolePlaceholder  = "node-<node>"
	minSecretsPoll          = time.Second
)

// SecretsServer is the OpenBao (or Vault) server a node's secrets sidecars read from
// (`secretsFrom.openbao`). It holds no credential: the sidecar logs in with the projected token
// of the node's ServiceAccount.
type SecretsServer struct {
	Address    string // http(s)://host[:port]
	CAFile     string // absolute; "" with CAFetchURL or the system's roots
	CAPEM      string // the content of CAFile, read at load (a CA is public)
	CAFetchURL string // the sidecar fetches the CA from here instead
	// CASHA256 pins the CA of CAFetchURL (`caSha256`): the lowercase hex SHA-256 of the bytes
	// the URL serves. plan and the sidecar refuse a CA with another digest; "" pins nothing.
	CASHA256  string
	AuthMount string // the mount of the kubernetes auth method
	Role      string // the server's role the sidecar logs in as, as the file gives it
	// RoleDefault: the file gives no role; the deployment's default is used (SecretsRole).
	RoleDefault bool
	Audience    string // the audience of the projected token
	Poll        time.Duration
	Line        int // where the section is written, for plan's findings
}

// SidecarSecret is one file the sidecar writes under /run/secrets (`sidecarSecrets.<file>`):
// a key of a KV v2 secret (decoded, or only one variable of it) or a template over its keys.
type SidecarSecret struct {
	File     string
	Mount    string // the KV v2 mount
	Path     string // the secret's path in the mount
	Key      string // "" with Template
	Template string // Go text/template over the secret's keys
	Encoding string // "" or EncodingBase64
	Variable string // the value holds NAME=value lines; the file gets this one's value
	Restart  bool   // a new value stops the service, which Kubernetes starts again
	// Login reads the static credentials (username, password) of a login of `central:`
	// instead of a KV secret; Entry reads a KV entry of `central:` (key value by default);
	// S3KeyPair reads the KV entry of a key pair of `central.s3` (access_key, secret_key).
	Login, Entry, S3KeyPair string
	Line                    int
}

// NeedsRestart reports whether some secret of the role restarts the service.
func (r *Role) NeedsRestart() bool {
	return slices.ContainsFunc(r.SidecarSecrets, func(s SidecarSecret) bool { return s.Restart })
}

// SecretsImageName is the name of a role's secrets sidecar image among the group's images;
// its repository is <registry>/<ns>/<node>-<role>/secrets (FR-004e).
func SecretsImageName(node, role string) string { return RoleObjectName(node, role) + "/secrets" }

// secretsFrom decodes a node's `secretsFrom:`; nodeName "" is defaults:, whose role default
// is filled per node.
func (d *decoder) secretsFrom(n *yaml.Node, path, nodeName string) *SecretsServer {
	m, ok := d.mapping(n, path, secretsFromFields)
	if !ok {
		return nil
	}
	v := m["openbao"]
	if v == nil {
		d.lacks(deref(n), path, "openbao", "is required")
		return nil
	}
	p := path + ".openbao"
	om, ok := d.mapping(v, p, openbaoFields)
	if !ok {
		return nil
	}
	s := &SecretsServer{AuthMount: DefaultSecretsAuthMount, Audience: DefaultSecretsAudience, Poll: DefaultSecretsPoll, Line: deref(v).Line}
	s.RoleDefault = true // until the file names one
	if a := om["address"]; a != nil {
		if str, ok := d.str(a, p+".address"); ok {
			s.Address = str
			d.httpURL(a, p+".address", str)
		}
	} else {
		d.lacks(deref(v), p, "address", "is required")
	}
	if c := om["caFile"]; c != nil {
		if str, ok := d.str(c, p+".caFile"); ok {
			s.CAFile, s.CAPEM = d.caFile(c, p+".caFile", str)
		}
	}
	if c := om["caFetchUrl"]; c != nil {
		if str, ok := d.str(c, p+".caFetchUrl"); ok {
			s.CAFetchURL = str
			d.httpURL(c, p+".caFetchUrl", str)
			if om["caFile"] != nil {
				d.errAt(deref(c), p+".caFetchUrl", "set one of caFile and caFetchUrl, not both")
			}
		}
	}
	if c := om["caSha256"]; c != nil {
		if str, ok := d.str(c, p+".caSha256"); ok {
			s.CASHA256 = d.caPin(c, p+".caSha256", str, om["caFetchUrl"] != nil)
		}
	}
	for _, f := range []struct {
		key string
		dst *string
	}{{"authMount", &s.AuthMount}, {"role", &s.Role}, {"audience", &s.Audience}} {
		if x := om[f.key]; x != nil {
			if str, ok := d.str(x, p+"."+f.key); ok {
				if str == "" || strings.ContainsAny(str, " \t\n") {
					d.errAt(deref(x), p+"."+f.key, "%q is not a name (empty or with blanks)", str)
					continue
				}
				*f.dst = str
				if f.key == "role" {
					s.RoleDefault = false
				}
			}
		}
	}
	if x := om["pollInterval"]; x != nil {
		if dur, ok := d.duration(x, p+".pollInterval"); ok {
			if dur < minSecretsPoll {
				d.errAt(deref(x), p+".pollInterval", "%s is shorter than %s", dur, minSecretsPoll)
			} else {
				s.Poll = dur
			}
		}
	}
	return s
}

// caPin checks a caSha256: 64 hex digits, with or without a "sha256:" prefix, and a
// caFetchUrl to pin (a caFile is the group's own copy: nothing to pin). It returns the digest
// in lowercase hex.
func (d *decoder) caPin(n *yaml.Node, path, s string, fetched bool) string {
	hexDigits := strings.ToLower(strings.TrimPrefix(s, "sha256:"))
	if !caPinRe.MatchString(hexDigits) {
		d.errAt(deref(n), path, "%q is not a SHA-256 digest (64 hex digits, as `sha256sum` prints)", s)
		return ""
	}
	if !fetched {
		d.errAt(deref(n), path, "needs caFetchUrl: it pins the CA fetched from there (a caFile is trusted as it is)")
	}
	return hexDigits
}

var caPinRe = regexp.MustCompile(`^[0-9a-f]{64}$`)

// httpURL checks that s is an absolute http or https URL.
func (d *decoder) httpURL(n *yaml.Node, path, s string) {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		d.errAt(deref(n), path, "%q is not an http:// or https:// address", s)
	}
}

// caFile reads a CA bundle of the group directory and checks that it holds certificates.
func (d *decoder) caFile(n *yaml.Node, path, src string) (string, string) {
	abs, ok := d.groupPath(deref(n), path, src, "file ")
	if !ok {
		return abs, ""
	}
	b, err := os.ReadFile(abs)
	if err != nil {
		d.errAt(deref(n), path, "%s cannot be read: %v", shown(src), unwrapPath(err))
		return abs, ""
	}
	rest, certs := b, 0
	for {
		var blk *pem.Block
		blk, rest = pem.Decode(rest)
		if blk == nil {
			break
		}
		if _, err := x509.ParseCertificate(blk.Bytes); blk.Type == "CERTIFICATE" && err == nil {
			certs++
		}
	}
	if certs == 0 {
		d.errAt(deref(n), path, "%s holds no PEM certificate", shown(src))
	}
	return abs, string(b)
}

// sidecarSecrets decodes a role's `sidecarSecrets:`, sorted by file name.
func (d *decoder) sidecarSecrets(n *yaml.Node, path string) []SidecarSecret {
	var out []SidecarSecret
	for _, e := range d.entries(n, path) {
		p := join(path, e.key)
		if msg := badSecretFile(e.key); msg != "" {
			d.errAt(e.keyNode, p, "file name %q %s", shortName(e.key), msg)
		}
		m, ok := d.mapping(e.val, p, sidecarSecretFields)
		if !ok {
			continue
		}
		s := SidecarSecret{File: e.key, Mount: DefaultSecretsMount, Line: e.keyNode.Line}
		for _, f := range []struct {
			key string
			dst *string
		}{{"mount", &s.Mount}, {"path", &s.Path}, {"key", &s.Key}, {"template", &s.Template}, {"encoding", &s.Encoding}, {"variable", &s.Variable},
			{"login", &s.Login}, {"entry", &s.Entry}, {"s3KeyPair", &s.S3KeyPair}} {
			if x := m[f.key]; x != nil {
				if str, ok := d.str(x, p+"."+f.key); ok {
					*f.dst = str
				}
			}
		}
		if x := m["restart"]; x != nil {
			s.Restart, _ = d.boolean(x, p+".restart")
		}
		d.checkSidecarSecret(e.val, m, p, &s)
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b SidecarSecret) int { return strings.Compare(a.File, b.File) })
	return out
}

// checkSidecarSecret reports what one secret lacks or has twice.
func (d *decoder) checkSidecarSecret(n *yaml.Node, m map[string]*yaml.Node, p string, s *SidecarSecret) {
	at := func(k string) *yaml.Node { return deref(m[k]) }
	if m["login"] != nil || m["entry"] != nil || m["s3KeyPair"] != nil {
		d.checkCentralSecret(n, m, p, s)
		return
	}
	if m["path"] == nil {
		d.lacks(deref(n), p, "path", "is required")
	} else if s.Path == "" || strings.HasPrefix(s.Path, "/") || strings.HasSuffix(s.Path, "/") {
		d.errAt(at("path"), p+".path", "%q is not a path in the mount (no leading or trailing /)", s.Path)
	}
	if m["mount"] != nil && (s.Mount == "" || strings.Contains(s.Mount, "/")) {
		d.errAt(at("mount"), p+".mount", "%q is not a mount name", s.Mount)
	}
	switch {
	case m["key"] == nil && m["template"] == nil:
		d.lacks(deref(n), p, "", "needs key or template")
	case m["key"] != nil && m["template"] != nil:
		d.errAt(at("template"), p+".template", "set one of key and template, not both")
	case m["template"] != nil:
		if _, err := template.New(s.File).Option("missingkey=error").Parse(s.Template); err != nil {
			d.errAt(at("template"), p+".template", "does not parse: %v", err)
		}
	}
	if m["encoding"] != nil {
		switch {
		case s.Encoding != EncodingBase64:
			d.errAt(at("encoding"), p+".encoding", "%q is not base64 (the only encoding)", s.Encoding)
		case m["key"] == nil:
			d.errAt(at("encoding"), p+".encoding", "needs key: a template's text is written as it is")
		}
	}
	if m["variable"] != nil {
		switch {
		case m["key"] == nil:
			d.errAt(at("variable"), p+".variable", "needs key: the value of key holds the NAME=value lines")
		case !envName.MatchString(s.Variable):
			d.errAt(at("variable"), p+".variable", "%q is not a variable name", s.Variable)
		}
	}
}

// checkCentralSecret checks a secret of `central:`: its place comes from the deployment, so
// it has no mount or path.
func (d *decoder) checkCentralSecret(n *yaml.Node, m map[string]*yaml.Node, p string, s *SidecarSecret) {
	for _, f := range []string{"mount", "path"} {
		if m[f] != nil {
			d.errAt(deref(m[f]), p+"."+f, "is set by login, entry or s3KeyPair (the deployment's own name): leave it out")
		}
	}
	var set []string
	for _, f := range []string{"login", "entry", "s3KeyPair"} {
		if m[f] != nil {
			set = append(set, f)
		}
	}
	if len(set) > 1 {
		d.errAt(deref(m[set[1]]), p+"."+set[1], "set one of login, entry and s3KeyPair, not %s and %s", set[0], set[1])
		return // which keys are right depends on which one is meant
	}
	if m["key"] != nil && m["template"] != nil {
		d.errAt(deref(m["template"]), p+".template", "set one of key and template, not both")
	}
	switch {
	case m["login"] != nil && m["key"] == nil && m["template"] == nil:
		d.lacks(deref(n), p, "", "needs key (username or password) or template")
	case m["login"] != nil && m["key"] != nil && s.Key != "username" && s.Key != "password":
		d.errAt(deref(m["key"]), p+".key", "%q is not username or password", s.Key)
	case m["s3KeyPair"] != nil && m["key"] == nil && m["template"] == nil:
		d.lacks(deref(n), p, "", "needs key ("+CentralS3AccessField+" or "+CentralS3SecretField+") or template")
	case m["s3KeyPair"] != nil && m["key"] != nil && s.Key != CentralS3AccessField && s.Key != CentralS3SecretField:
		d.errAt(deref(m["key"]), p+".key", "%q is not %s or %s", s.Key, CentralS3AccessField, CentralS3SecretField)
	case m["entry"] != nil && m["key"] == nil && m["template"] == nil:
		s.Key = CentralKVField
	}
	if m["template"] != nil {
		if _, err := template.New(s.File).Option("missingkey=error").Parse(s.Template); err != nil {
			d.errAt(deref(m["template"]), p+".template", "does not parse: %v", err)
		}
	}
	if m["encoding"] != nil && (s.Encoding != EncodingBase64 || m["key"] == nil) {
		d.errAt(deref(m["encoding"]), p+".encoding", "%q: base64 with key only", s.Encoding)
	}
	if m["variable"] != nil {
		d.errAt(deref(m["variable"]), p+".variable", "is for a KV secret's env-style value, not login, entry or s3KeyPair")
	}
}

// badSecretFile says why name cannot be a file directly under /run/secrets, "" when it can.
func badSecretFile(name string) string {
	switch {
	case name == "" || name == "." || name == "..":
		return "is not a file name"
	case strings.ContainsAny(name, "/\x00"):
		return "has a '/': files lie directly under " + SecretsDir
	case strings.HasPrefix(name, "."):
		return "starts with '.': the sidecar keeps its own files so"
	case len(name) > secretsconf.MaxFileName:
		return fmt.Sprintf("is %d bytes long, more than %d: the sidecar writes it through a temporary file %s, and a file name has at most 255 bytes", len(name), secretsconf.MaxFileName, secretsconf.TempPattern("<name>"))
	}
	return ""
}

// shortName is name cut to 40 bytes for a message: a too-long name shown whole would hide the
// message.
func shortName(name string) string {
	if len(name) <= 40 {
		return name
	}
	return name[:40] + "…"
}

// validateSidecar checks a role's sidecar fields against its service and its node's server.
func (d *decoder) validateSidecar(n *Node, r *Role, path string) {
	if r.Service != nil {
		if len(r.SidecarSecrets) > 0 && n.SecretsFrom == nil {
			d.errPath(path+".sidecarSecrets", "needs secretsFrom.openbao on node %s: the server the sidecar reads from", n.Name)
		}
		return
	}
	for _, f := range []struct {
		field string
		set   bool
	}{{"sidecarSecrets", len(r.SidecarSecrets) > 0}, {"companion", r.Companion}} {
		if f.set {
			d.errPath(path+"."+f.field, "needs service: only a role with its own service image has a %s", f.field)
		}
	}
}

// SecretsRole is the role node's sidecars log in as with server s: the file's, else the
// deployment's default, DefaultSecretsRole.
func (g *Group) SecretsRole(node string, s *SecretsServer) string {
	if !s.RoleDefault {
		return s.Role
	}
	return DefaultSecretsRole(g.Name, node)
}

// DefaultSecretsRole is the default role of node in the deployment whose key is key:
// `slipway.<key>.<node>`. A node name holds no '.', so the node is the last segment and the
// key the rest: two deployments, or two nodes, never share a default role (issue 46 item 8;
// `node-<node>` did, across every group with that node name).
func DefaultSecretsRole(key, node string) string { return "slipway." + key + "." + node }
