package spire

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"

	"slipway.dev/slipway/internal/spec"
)

// SSHNode is the spire node reached over SSH: its host key is checked against the one the
// file names, the client key comes from SSH_PRIVATE_KEY_FILE, and a script (and its data)
// goes in the session's stdin, never in an argument: the command is `sh` alone.
type SSHNode struct {
	client *ssh.Client
}

var _ ConfigNode = (*SSHNode)(nil)

// DialSSH connects to target, checking its host key against hostKey (a known_hosts line),
// with the private key in keyFile.
func DialSSH(ctx context.Context, target spec.SSHTarget, hostKey, keyFile string) (*SSHNode, error) {
	_, _, pub, _, _, err := ssh.ParseKnownHosts([]byte(hostKey))
	if err != nil {
		return nil, fmt.Errorf("spire node %s: host key: %w", target, err)
	}
	pem, err := os.ReadFile(keyFile)
	if err != nil {
		return nil, fmt.Errorf("spire node %s: key file (%s): %w", target, spec.EnvSSHPrivateKey, err)
	}
	signer, err := ssh.ParsePrivateKey(pem)
	if err != nil {
		// The parser's message never quotes the key.
		return nil, fmt.Errorf("spire node %s: key file %s: %w", target, keyFile, err)
	}
	cfg := &ssh.ClientConfig{
		User:            target.User,
		Auth:            []ssh.AuthMethod{ssh.PublicKeys(signer)},
		HostKeyCallback: ssh.FixedHostKey(pub),
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", target.Addr())
	if err != nil {
		return nil, fmt.Errorf("spire node %s: %w", target, err)
	}
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	c, chans, reqs, err := ssh.NewClientConn(conn, target.Addr(), cfg)
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("spire node %s: %w", target, err)
	}
	_ = conn.SetDeadline(time.Time{})
	return &SSHNode{client: ssh.NewClient(c, chans, reqs)}, nil
}

// Run runs script with sh, from stdin, and returns its stdout; its stderr goes in the error.
func (n *SSHNode) Run(ctx context.Context, script string) (string, error) {
	s, err := n.client.NewSession()
	if err != nil {
		return "", err
	}
	defer s.Close()
	var out, errb bytes.Buffer
	s.Stdin, s.Stdout, s.Stderr = strings.NewReader(script), &out, &errb
	done := make(chan error, 1)
	go func() { done <- s.Run("sh") }()
	select {
	case err = <-done:
	case <-ctx.Done():
		_ = s.Signal(ssh.SIGKILL)
		return "", ctx.Err()
	}
	if err != nil {
		return "", fmt.Errorf("%w: %s", err, strings.TrimSpace(errb.String()))
	}
	return out.String(), nil
}

// Close closes the connection.
func (n *SSHNode) Close() error { return n.client.Close() }
