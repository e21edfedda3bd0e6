package spire

import (
	"context"
	"fmt"
	"os"

	"slipway.dev/slipway/internal/spec"
)

// Conn is what a Lane talks to besides the cluster; Close ends both connections.
type Conn struct {
	Server Registrar
	Node   ConfigNode
	Close  func()
}

// Connect dials the server and the spire node s names, with the credentials the environment
// names (never the file): SPIRE_ADMIN_CERT_FILE, SPIRE_ADMIN_KEY_FILE,
// SPIRE_TRUST_BUNDLE_FILE and SSH_PRIVATE_KEY_FILE.
func Connect(ctx context.Context, s *spec.Spire) (*Conn, error) {
	env := map[string]string{}
	for _, k := range []string{spec.EnvSpireAdminCert, spec.EnvSpireAdminKey, spec.EnvSpireTrustBundle, spec.EnvSSHPrivateKey} {
		v := os.Getenv(k)
		if v == "" {
			return nil, fmt.Errorf("spire: %s is not set: spire: needs the file it names", k)
		}
		env[k] = v
	}
	srv, err := DialServer(s.Server, s.TrustDomain, env[spec.EnvSpireAdminCert], env[spec.EnvSpireAdminKey], env[spec.EnvSpireTrustBundle])
	if err != nil {
		return nil, err
	}
	node, err := DialSSH(ctx, s.SSH, s.HostKey, env[spec.EnvSSHPrivateKey])
	if err != nil {
		srv.Close()
		return nil, err
	}
	return &Conn{Server: srv, Node: node, Close: func() { node.Close(); srv.Close() }}, nil
}
