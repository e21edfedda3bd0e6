package spec

import (
	"encoding/base64"
	"net"
	"path"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Defaults and environment of `spire:` (FR-015 to FR-017).
const (
	DefaultSpireTokenPath = "/var/run/secrets/spire/token"
	// SpireBundleFile is the trust bundle's file name beside the token in the pod.
	SpireBundleFile = "bundle.crt"
	// SpireAudience is the audience of every node's projected token and of the server's
	// token review.
	SpireAudience = "spire-server"

	// The credentials are never in the file: the admin X.509-SVID for the registration API,
	// the bundle that verifies the server, the SSH key of the spire node.
	EnvSpireAdminCert   = "SPIRE_ADMIN_CERT_FILE"
	EnvSpireAdminKey    = "SPIRE_ADMIN_KEY_FILE"
	EnvSpireTrustBundle = "SPIRE_TRUST_BUNDLE_FILE"
	EnvSSHPrivateKey    = "SSH_PRIVATE_KEY_FILE"
	// EnvSpireAPIServer is the cluster's API server as the spire node reaches it; unset: the
	// kubeconfig's (FR-017).
	EnvSpireAPIServer = "K8S_SPIRE_API_SERVER"
)

// Spire is the group file's `spire:` section: every node's SPIRE agent attests with k8s_psat
// to this server (FR-015 to FR-017).
type Spire struct {
	Server      string // host:port of the registration API (TCP)
	TrustDomain string
	SSH         SSHTarget // the spire node: the server's configuration the API cannot set
	HostKey     string    // the spire node's host key, one known_hosts line
	ConfigDir   string    // absolute, on the spire node
	PIDFile     string    // absolute, on the spire node; default <configDir>/spire-server.pid
	TokenPath   string    // absolute, in the node's container
	Line        int       // the line where the `spire:` mapping starts
}

// SSHTarget is `user@host:port`.
type SSHTarget struct {
	User, Host string
	Port       int
}

// Addr is host:port.
func (t SSHTarget) Addr() string { return net.JoinHostPort(t.Host, strconv.Itoa(t.Port)) }

func (t SSHTarget) String() string { return t.User + "@" + t.Addr() }

// ParseSSHTarget reads `user@host[:port]` (port 22 when left out).
func ParseSSHTarget(s string) (SSHTarget, bool) {
	user, hostport, ok := strings.Cut(s, "@")
	if !ok || user == "" || strings.ContainsAny(user, " :/") {
		return SSHTarget{}, false
	}
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		host, port = strings.Trim(hostport, "[]"), "22"
	}
	n, err := strconv.Atoi(port)
	if host == "" || err != nil || n < 1 || n > 65535 || strings.ContainsAny(host, " /@") {
		return SSHTarget{}, false
	}
	return SSHTarget{User: user, Host: host, Port: n}, true
}

// SpireCluster is the cluster's name on the server: <kube-system UID>-<namespace> (FR-016).
func SpireCluster(kubeSystemUID, namespace string) string { return kubeSystemUID + "-" + namespace }

// spire decodes `spire:`.
func (d *decoder) spire(n *yaml.Node) *Spire {
	const p = "spire"
	m, ok := d.mapping(n, p, spireFields)
	if !ok {
		return nil
	}
	s := &Spire{Line: deref(n).Line, TokenPath: DefaultSpireTokenPath}
	line := s.Line
	if v := m["server"]; v != nil {
		if str, ok := d.str(v, p+".server"); ok {
			if _, port, err := net.SplitHostPort(str); err != nil || port == "" {
				d.errAt(deref(v), p+".server", "%q is not host:port", str)
			} else {
				s.Server = str
			}
		}
	} else {
		d.add(line, p+".server", "is required")
	}
	if v := m["trustDomain"]; v != nil {
		if str, ok := d.str(v, p+".trustDomain"); ok {
			if isSubdomain(str) {
				s.TrustDomain = str
			} else {
				d.errAt(deref(v), p+".trustDomain", "%q is not a trust domain (a DNS name, lowercase)", str)
			}
		}
	} else {
		d.add(line, p+".trustDomain", "is required")
	}
	if v := m["ssh"]; v != nil {
		if str, ok := d.str(v, p+".ssh"); ok {
			if t, ok := ParseSSHTarget(str); ok {
				s.SSH = t
			} else {
				d.errAt(deref(v), p+".ssh", "%q is not user@host:port", str)
			}
		}
	} else {
		d.add(line, p+".ssh", "is required")
	}
	if v := m["hostKey"]; v != nil {
		if str, ok := d.str(v, p+".hostKey"); ok {
			if knownHostsLine(str) {
				s.HostKey = str
			} else {
				d.errAt(deref(v), p+".hostKey", "is not one known_hosts line (`[host]:port ssh-ed25519 AAAA…`)")
			}
		}
	} else {
		d.add(line, p+".hostKey", "is required: the spire node's host key is checked")
	}
	s.ConfigDir = d.spirePath(m["configDir"], p+".configDir", line, "")
	s.PIDFile = d.spirePath(m["pidFile"], p+".pidFile", line, path.Join(s.ConfigDir, "spire-server.pid"))
	if v := m["tokenPath"]; v != nil {
		s.TokenPath = d.spirePath(v, p+".tokenPath", line, DefaultSpireTokenPath)
		if dir := path.Dir(s.TokenPath); dir == "/" || dir == stateMount || strings.HasPrefix(dir, stateMount+"/") ||
			path.Base(s.TokenPath) == SpireBundleFile {
			d.errAt(deref(v), p+".tokenPath", "%q: the token's directory is a volume of its own, not / or under /var/lib, and the file is not %s", s.TokenPath, SpireBundleFile)
		}
	}
	return s
}

// spirePath reads an absolute path; def "" makes it required.
func (d *decoder) spirePath(v *yaml.Node, p string, line int, def string) string {
	if v == nil {
		if def == "" {
			d.add(line, p, "is required")
		}
		return def
	}
	str, ok := d.str(v, p)
	if !ok {
		return def
	}
	if !path.IsAbs(str) || path.Clean(str) != str || str == "/" || strings.ContainsAny(str, "'\"\\$`\n") {
		d.errAt(deref(v), p, "%q is not a clean absolute path (without quotes, `$` or backslashes)", str)
		return def
	}
	return str
}

// stateMount is where a node's state claim is mounted.
const stateMount = "/var/lib"

// knownHostsLine checks the shape of `<hosts> <key type> <base64 key>`.
func knownHostsLine(s string) bool {
	f := strings.Fields(s)
	if len(f) < 3 || strings.Contains(s, "\n") {
		return false
	}
	_, err := base64.StdEncoding.DecodeString(f[2])
	return err == nil && (strings.HasPrefix(f[1], "ssh-") || strings.HasPrefix(f[1], "ecdsa-"))
}

// Names of the SPIRE lane's objects (FR-015, FR-016).
const (
	// LabelSpireAgent marks every pod that runs a SPIRE agent, in every group: no two of them
	// share a kube node, because k8s_psat gives one agent ID per kube node.
	LabelSpireAgent = "slipway.dev/spire-agent"
	// LabelSpirePod marks a node's agent pod with a digest of its pod template: the node's
	// alias entry selects it (k8s_psat:agent_pod_label), so an entry moves to the new pods at
	// each rollout and the pod that follows on the same kube node (k8s_psat gives it the same
	// agent ID) is never handed the last one's identity.
	LabelSpirePod = "slipway.dev/spire-pod"
	// SpireServerAccount reviews the nodes' tokens, for the server.
	SpireServerAccount = "spire-server"
	// SpireAgentConfigMap holds the server's trust bundle.
	SpireAgentConfigMap = "spire-agent"
)
