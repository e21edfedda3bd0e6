package devcluster

import (
	"context"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// The dev environment's secrets server (dev up --secrets): Vault v1.14.8 (vaultbuild.go), in
// memory, speaking the HTTP API OpenBao shares with it, which is all slipway and its secrets
// sidecar use. KV v2 is mounted at SecretsKVMount and kubernetes auth at SecretsAuthMount,
// configured against the dev API server with a reviewer of its own, so a pod's projected
// service-account token logs in through a real TokenReview. It makes no roles or policies:
// tests and operators write them with the root token.
//
// It runs as a server with inmem storage that slipway initialises and unseals, not with -dev:
// -dev prints its root token and unseal key to its output, which would put them in the log.
// The root token is only in the 0600 file OpenBaoTokenFile; the unseal key is dropped. Like
// -dev, it keeps nothing across a restart: a restart configures it again, with a new token.
const (
	SecretsKVMount   = "secret"
	SecretsAuthMount = "kubernetes"
	// SecretsReviewer is the ServiceAccount (in kube-system, bound to system:auth-delegator)
	// whose token the server's kubernetes auth sends its TokenReviews with: a login token with
	// a custom audience cannot review itself.
	SecretsReviewer = "slipway-dev-openbao-reviewer"
	secretsProc     = "openbao" // pids/openbao, logs/openbao.log
)

// BridgeGateway is the real node's bridge address in slot 0 (the first of PodCIDR; another
// slot's is HostShare.Gateway): the pods' gateway, and so the host address every pod on the
// real node reaches.
var BridgeGateway = func() string {
	_, n, err := net.ParseCIDR(PodCIDR)
	if err != nil {
		panic(err)
	}
	ip := n.IP.To4()
	return net.IPv4(ip[0], ip[1], ip[2], ip[3]+1).String()
}()

// secretsHost is where the server listens: on the real node's bridge when there is one, the
// address the host and that node's pods both reach; on loopback otherwise.
func (e *Env) secretsHost() string {
	if e.RealNode != "" {
		return e.hostShare().Gateway
	}
	return "127.0.0.1"
}

// secretsPID is the PID of the running secrets server of the cluster in dir.
func secretsPID(dir string) (int, bool) {
	pid, err := readPID(filepath.Join(dir, "pids", secretsProc))
	if err != nil || !alive(pid) {
		return 0, false
	}
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	// Any build of it (vault-<patch hash>): an older slipway's server is found and replaced.
	return pid, err == nil && strings.HasPrefix(filepath.Base(exe), "vault-")
}

// ensureSecrets starts and configures the secrets server unless it runs, answers and listens
// where it should (on the bridge once the cluster has a real node). bin is its binary.
func (e *Env) ensureSecrets(ctx context.Context, bin string, progress io.Writer) error {
	host := e.secretsHost()
	pid, running := secretsPID(e.Dir)
	if running && e.OpenBaoAddr != "" && strings.Contains(e.OpenBaoAddr, "//"+host+":") {
		if err := e.secretsClient().health(ctx); err == nil {
			return nil
		}
	}
	if running {
		stopPID(pid, 10*time.Second)
	}
	start := time.Now()
	if host == e.hostShare().Gateway {
		if err := e.ensureBridge(); err != nil {
			return err
		}
	}
	dir := filepath.Join(e.Dir, "openbao")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("dev environment: secrets server: %w", err)
	}
	if err := e.secretsPorts(); err != nil {
		return err
	}
	if err := writeSecretsTLS(dir, e.hostShare().Gateway); err != nil {
		return fmt.Errorf("dev environment: secrets server: certificate: %w", err)
	}
	addr := net.JoinHostPort(host, strconv.Itoa(e.Ports[secretsProc]))
	cfg := filepath.Join(dir, "server.hcl")
	if err := os.WriteFile(cfg, []byte(secretsConfig(dir, addr, e.Ports[secretsProc+"-cluster"])), 0o600); err != nil {
		return fmt.Errorf("dev environment: secrets server: %w", err)
	}
	fmt.Fprintf(progress, "dev: starting the secrets server (Vault %s, in memory) at https://%s\n", VaultVersion, addr)
	e.OpenBaoAddr = "https://" + addr
	e.OpenBaoCAFile = filepath.Join(dir, "ca.crt")
	e.OpenBaoTokenFile = filepath.Join(dir, "root-token")
	if _, err := e.startExec(secretsProc, bin, []string{"server", "-config=" + cfg}); err != nil {
		return err
	}
	if err := e.configureSecrets(ctx); err != nil {
		if pid, ok := secretsPID(e.Dir); ok {
			stopPID(pid, 10*time.Second)
		}
		e.OpenBaoAddr, e.OpenBaoCAFile, e.OpenBaoTokenFile = "", "", ""
		return fmt.Errorf("%w; last log lines:\n%s", err, logTail(filepath.Join(e.Dir, "logs", secretsProc+".log"), 20))
	}
	if err := e.save(); err != nil {
		return err
	}
	fmt.Fprintf(progress, "dev: secrets server ready in %s: KV v2 at %s/, kubernetes auth at %s/ (root token in %s)\n",
		time.Since(start).Round(100*time.Millisecond), SecretsKVMount, SecretsAuthMount, e.OpenBaoTokenFile)
	return nil
}

// secretsPorts keeps the ports of an earlier start, so that what `dev env` printed still
// points at the server, and picks free ones the first time.
func (e *Env) secretsPorts() error {
	if e.Ports[secretsProc] != 0 && e.Ports[secretsProc+"-cluster"] != 0 {
		return nil
	}
	p, err := freePorts(2)
	if err != nil {
		return err
	}
	if e.Ports == nil {
		e.Ports = map[string]int{}
	}
	e.Ports[secretsProc], e.Ports[secretsProc+"-cluster"] = p[0], p[1]
	return nil
}

// secretsConfig is the server's configuration: inmem storage, one TLS listener, its cluster
// port (request forwarding, unused with one node) on loopback, no UI, no mlock.
func secretsConfig(dir, addr string, clusterPort int) string {
	cluster := net.JoinHostPort("127.0.0.1", strconv.Itoa(clusterPort))
	return fmt.Sprintf(`storage "inmem" {}

listener "tcp" {
  address         = %q
  cluster_address = %q
  tls_cert_file   = %q
  tls_key_file    = %q
}

api_addr      = "https://%s"
cluster_addr  = "https://%s"
disable_mlock = true
ui            = false
`, addr, cluster, filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"), addr, cluster)
}

// writeSecretsTLS makes, once, a CA of the secrets server's own and its serving certificate
// for the bridge address (gateway) and loopback (the server may move from one to the other).
func writeSecretsTLS(dir, gateway string) error {
	if _, err := os.Stat(filepath.Join(dir, "tls.key")); err == nil {
		return nil
	}
	now := time.Now().Add(-time.Hour)
	ca, err := newCert(now, 1, nil, &x509.Certificate{
		Subject:               pkix.Name{CommonName: "slipway-dev-openbao-ca"},
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	})
	if err != nil {
		return err
	}
	leaf, err := newCert(now, 2, ca, &x509.Certificate{
		Subject:     pkix.Name{CommonName: "openbao"},
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:    []string{"localhost"},
		IPAddresses: []net.IP{net.ParseIP(gateway), net.ParseIP("127.0.0.1")},
	})
	if err != nil {
		return err
	}
	kb, err := x509.MarshalECPrivateKey(leaf.key)
	if err != nil {
		return err
	}
	if err := writePEM(filepath.Join(dir, "ca.crt"), "CERTIFICATE", ca.cert.Raw); err != nil {
		return err
	}
	if err := os.Chmod(filepath.Join(dir, "ca.crt"), 0o644); err != nil {
		return err
	}
	if err := writePEM(filepath.Join(dir, "tls.crt"), "CERTIFICATE", leaf.cert.Raw); err != nil {
		return err
	}
	return writePEM(filepath.Join(dir, "tls.key"), "EC PRIVATE KEY", kb)
}

// secretsExports is the line of Exports for the secrets server (never its token: the file).
func (e *Env) secretsExports() string {
	if e.OpenBaoAddr == "" {
		return ""
	}
	return fmt.Sprintf("export SLIPWAY_DEV_OPENBAO_ADDR=%s SLIPWAY_DEV_OPENBAO_CA_FILE=%s SLIPWAY_DEV_OPENBAO_TOKEN_FILE=%s\n",
		e.OpenBaoAddr, e.OpenBaoCAFile, e.OpenBaoTokenFile)
}

// stopSecrets stops the secrets server of the cluster in dir; it reports whether one ran.
func stopSecrets(dir string) bool {
	pid, ok := secretsPID(dir)
	_ = os.Remove(filepath.Join(dir, "pids", secretsProc))
	if !ok {
		return false
	}
	stopPID(pid, 10*time.Second)
	return true
}

// errSecretsSealed says the server answered but is not an unsealed active node.
var errSecretsSealed = errors.New("secrets server is not initialised, unsealed and active")
