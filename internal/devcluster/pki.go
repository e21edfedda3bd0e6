package devcluster

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// writePKI makes a CA, the API server's serving certificate, an admin client certificate
// (group system:masters) and the service-account key pair, all under dir/pki. The cluster
// lives on loopback only, so the certificates name 127.0.0.1 and localhost.
func writePKI(dir string) error {
	pki := filepath.Join(dir, "pki")
	if err := os.MkdirAll(pki, 0o700); err != nil {
		return err
	}
	now := time.Now().Add(-time.Hour)
	ca, err := newCA(now, 1, "slipway-dev-ca")
	if err != nil {
		return err
	}
	if err := writePEM(filepath.Join(pki, "ca.crt"), "CERTIFICATE", ca.cert.Raw); err != nil {
		return err
	}
	leaves := []struct {
		name string
		tmpl *x509.Certificate
	}{
		{"apiserver", &x509.Certificate{
			Subject:     pkix.Name{CommonName: "kube-apiserver"},
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
			DNSNames:    []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"},
			IPAddresses: []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("10.96.0.1")},
		}},
		{"admin", &x509.Certificate{
			Subject:     pkix.Name{CommonName: "kubernetes-admin", Organization: []string{"system:masters"}},
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		}},
	}
	for i, l := range leaves {
		l.tmpl.KeyUsage = x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment
		c, err := newCert(now, int64(i+2), ca, l.tmpl)
		if err != nil {
			return err
		}
		kb, err := x509.MarshalECPrivateKey(c.key)
		if err != nil {
			return err
		}
		if err := writePEM(filepath.Join(pki, l.name+".crt"), "CERTIFICATE", c.cert.Raw); err != nil {
			return err
		}
		if err := writePEM(filepath.Join(pki, l.name+".key"), "EC PRIVATE KEY", kb); err != nil {
			return err
		}
	}
	saKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	if err := writePEM(filepath.Join(pki, "sa.key"), "RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(saKey)); err != nil {
		return err
	}
	pub, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return err
	}
	return writePEM(filepath.Join(pki, "sa.pub"), "PUBLIC KEY", pub)
}

// keyCert is a certificate and its key.
type keyCert struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

// newCA makes a self-signed certificate authority named cn that signs certificates.
func newCA(notBefore time.Time, serial int64, cn string) (*keyCert, error) {
	return newCert(notBefore, serial, nil, &x509.Certificate{
		Subject:               pkix.Name{CommonName: cn},
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	})
}

// newCert makes a P-256 key and the certificate of tmpl for it, with serial, valid ten years
// from notBefore, signed by ca (nil: by itself).
func newCert(notBefore time.Time, serial int64, ca *keyCert, tmpl *x509.Certificate) (*keyCert, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl.SerialNumber = big.NewInt(serial)
	tmpl.NotBefore, tmpl.NotAfter = notBefore, notBefore.AddDate(10, 0, 0)
	parent, signer := tmpl, key
	if ca != nil {
		parent, signer = ca.cert, ca.key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, signer)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &keyCert{cert: cert, key: key}, nil
}

func writePEM(path, typ string, der []byte) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600)
}

// writeKubeconfig writes a kubeconfig with the admin credential embedded, so the file alone
// is enough for kubectl and client-go.
func writeKubeconfig(dir, server string) (string, error) {
	read := func(name string) (string, error) {
		b, err := os.ReadFile(filepath.Join(dir, "pki", name))
		if err != nil {
			return "", err
		}
		return base64.StdEncoding.EncodeToString(b), nil
	}
	ca, err := read("ca.crt")
	if err != nil {
		return "", err
	}
	crt, err := read("admin.crt")
	if err != nil {
		return "", err
	}
	key, err := read("admin.key")
	if err != nil {
		return "", err
	}
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: slipway-dev
  cluster:
    server: %s
    certificate-authority-data: %s
users:
- name: slipway-dev-admin
  user:
    client-certificate-data: %s
    client-key-data: %s
contexts:
- name: slipway-dev
  context:
    cluster: slipway-dev
    user: slipway-dev-admin
current-context: slipway-dev
`, server, ca, crt, key)
	path := filepath.Join(dir, "kubeconfig")
	return path, os.WriteFile(path, []byte(cfg), 0o600)
}
