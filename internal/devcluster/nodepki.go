package devcluster

import (
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// The dev PKI keeps no key of its CA (writePKI), so a cluster already running cannot have a
// certificate issued by it. The real node's certificates come from a CA of their own, whose
// key is kept (pki/node-ca.key, 0600):
//   - kubelet-client: the API server's client certificate towards the kubelet
//     (--kubelet-client-certificate); the kubelet trusts node-ca for clients;
//   - node: the kubelet's client certificate (system:node:<name> in system:nodes), which the
//     API server trusts through client-ca.crt, the bundle of the cluster's CA and node-ca;
//   - kubelet-serving: the kubelet's serving certificate, for its host name and address.

// kubeletClientUser is the API server's user name at the kubelet, bound to the
// system:kubelet-api-admin ClusterRole so that the kubelet's webhook authorizes logs, exec and
// port-forward.
const kubeletClientUser = "kube-apiserver-kubelet-client"

// ensureNodeCA makes node-ca, the API server's kubelet client certificate and the client CA
// bundle when any of them is missing. It leaves existing ones alone: the API server holds them.
func ensureNodeCA(dir string) error {
	pki := filepath.Join(dir, "pki")
	have := true
	for _, f := range []string{"node-ca.crt", "node-ca.key", "kubelet-client.crt", "kubelet-client.key", "client-ca.crt"} {
		if _, err := os.Stat(filepath.Join(pki, f)); err != nil {
			have = false
		}
	}
	if have {
		return nil
	}
	ca, err := newCA(time.Now().Add(-time.Hour), randomSerial(), "slipway-dev-node-ca")
	if err != nil {
		return err
	}
	if err := writeKeyCert(pki, "node-ca", ca); err != nil {
		return err
	}
	if err := issue(pki, "kubelet-client", ca, &x509.Certificate{
		Subject:     pkix.Name{CommonName: kubeletClientUser},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}); err != nil {
		return err
	}
	clusterCA, err := os.ReadFile(filepath.Join(pki, "ca.crt"))
	if err != nil {
		return err
	}
	bundle := append(clusterCA, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.cert.Raw})...)
	return os.WriteFile(filepath.Join(pki, "client-ca.crt"), bundle, 0o644)
}

// writeNodeCerts issues the kubelet's client and serving certificates for node name at addr.
func writeNodeCerts(dir, name string, addr net.IP) error {
	pki := filepath.Join(dir, "pki")
	ca, err := loadKeyCert(pki, "node-ca")
	if err != nil {
		return fmt.Errorf("node CA: %w", err)
	}
	if err := issue(pki, "node", ca, &x509.Certificate{
		Subject:     pkix.Name{CommonName: "system:node:" + name, Organization: []string{"system:nodes"}},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}); err != nil {
		return err
	}
	return issue(pki, "kubelet-serving", ca, &x509.Certificate{
		Subject:     pkix.Name{CommonName: name},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:    []string{name},
		IPAddresses: []net.IP{addr},
	})
}

// issue writes pki/<name>.crt and .key, a leaf of tmpl signed by ca.
func issue(pki, name string, ca *keyCert, tmpl *x509.Certificate) error {
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment
	c, err := newCert(time.Now().Add(-time.Hour), randomSerial(), ca, tmpl)
	if err != nil {
		return err
	}
	return writeKeyCert(pki, name, c)
}

func writeKeyCert(pki, name string, c *keyCert) error {
	kb, err := x509.MarshalECPrivateKey(c.key)
	if err != nil {
		return err
	}
	if err := writePEM(filepath.Join(pki, name+".crt"), "CERTIFICATE", c.cert.Raw); err != nil {
		return err
	}
	return writePEM(filepath.Join(pki, name+".key"), "EC PRIVATE KEY", kb)
}

func loadKeyCert(pki, name string) (*keyCert, error) {
	block := func(ext string) (*pem.Block, error) {
		b, err := os.ReadFile(filepath.Join(pki, name+ext))
		if err != nil {
			return nil, err
		}
		p, _ := pem.Decode(b)
		if p == nil {
			return nil, errors.New(name + ext + ": no PEM block")
		}
		return p, nil
	}
	cb, err := block(".crt")
	if err != nil {
		return nil, err
	}
	kb, err := block(".key")
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return nil, err
	}
	key, err := x509.ParseECPrivateKey(kb.Bytes)
	if err != nil {
		return nil, err
	}
	return &keyCert{cert: cert, key: key}, nil
}

// randomSerial is a certificate serial number: certificates issued later, by a CA made
// anew, never repeat one a client has seen.
func randomSerial() int64 {
	n, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	if err != nil {
		return time.Now().UnixNano()
	}
	return n.Int64() + 1
}
