package devcluster

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"testing"
)

// The serving and the admin certificate verify against the CA for their use, and each goes
// with its key.
func TestPKI(t *testing.T) {
	dir := t.TempDir()
	if err := writePKI(dir); err != nil {
		t.Fatal(err)
	}
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join(dir, "pki", name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(read("ca.crt")) {
		t.Fatal("ca.crt: no certificate")
	}
	for _, tt := range []struct {
		name, dnsName string
		usage         x509.ExtKeyUsage
	}{
		{"apiserver", "kubernetes.default.svc", x509.ExtKeyUsageServerAuth},
		{"admin", "", x509.ExtKeyUsageClientAuth},
	} {
		t.Run(tt.name, func(t *testing.T) {
			pair, err := tls.X509KeyPair(read(tt.name+".crt"), read(tt.name+".key"))
			if err != nil {
				t.Fatal(err)
			}
			block, _ := pem.Decode(read(tt.name + ".crt"))
			cert, err := x509.ParseCertificate(block.Bytes)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, DNSName: tt.dnsName, KeyUsages: []x509.ExtKeyUsage{tt.usage}}); err != nil {
				t.Error(err)
			}
			if len(pair.Certificate) != 1 {
				t.Errorf("%d certificates, want 1", len(pair.Certificate))
			}
		})
	}
	if block, _ := pem.Decode(read("sa.key")); block == nil {
		t.Error("sa.key: no PEM block")
	} else if _, err := x509.ParsePKCS1PrivateKey(block.Bytes); err != nil {
		t.Error(err)
	}
}
