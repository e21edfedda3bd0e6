package devcluster

import (
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The embedded sdk patch is the one under tools/vault (pins/gen.sh copies it).
func TestVaultPatchIsTheToolsCopy(t *testing.T) {
	want, err := os.ReadFile("../../tools/vault/" + vaultSDKPatchName)
	if err != nil {
		t.Fatal(err)
	}
	if string(want) != string(vaultSDKPatch) {
		t.Errorf("pins/vault-sdk.patch.txt differs from tools/vault/%s: run go generate ./internal/devcluster", vaultSDKPatchName)
	}
	mod, err := os.ReadFile("../../tools/vault/go.mod")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"replace " + vaultSDKModule + " => ./sdk", "godebug x509negativeserial=1", vaultModule + "/api v1.10.0"} {
		if !strings.Contains(string(mod), line) {
			t.Errorf("tools/vault/go.mod lacks %q", line)
		}
	}
}

// Only dev up --secrets builds the secrets server: not the publishing parts, not the node.
func TestVaultBuiltOnlyForSecrets(t *testing.T) {
	n := 0
	for _, tl := range tools {
		if tl.secrets {
			n++
			if tl.module != "vault" || !tl.own || tl.node {
				t.Errorf("tool %s: secrets, own %v, node %v; want only vault, cached on its own", tl.module, tl.own, tl.node)
			}
		}
	}
	if n != 1 {
		t.Errorf("%d secrets tools, want 1 (vault)", n)
	}
}

func TestBridgeGateway(t *testing.T) {
	if BridgeGateway != "10.244.0.1" {
		t.Errorf("BridgeGateway = %s, want 10.244.0.1 (the first address of %s)", BridgeGateway, PodCIDR)
	}
}

// The server's certificate names both addresses it may listen on, its key and the CA's are
// readable by their owner only, the CA certificate by all.
func TestSecretsTLS(t *testing.T) {
	dir := t.TempDir()
	if err := writeSecretsTLS(dir, BridgeGateway); err != nil {
		t.Fatal(err)
	}
	for name, mode := range map[string]os.FileMode{"ca.crt": 0o644, "tls.crt": 0o600, "tls.key": 0o600} {
		st, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != mode {
			t.Errorf("%s: mode %v, want %v", name, st.Mode().Perm(), mode)
		}
	}
	read := func(name string) *x509.Certificate {
		b, _ := os.ReadFile(filepath.Join(dir, name))
		blk, _ := pem.Decode(b)
		if blk == nil {
			t.Fatalf("%s: no PEM", name)
		}
		c, err := x509.ParseCertificate(blk.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	ca, leaf := read("ca.crt"), read("tls.crt")
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	for _, ip := range []string{BridgeGateway, "127.0.0.1"} {
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: ip}); err != nil {
			t.Errorf("certificate for %s: %v", ip, err)
		}
	}
	if leaf.VerifyHostname("192.0.2.2") == nil {
		t.Errorf("certificate names %v, want only the bridge address and loopback", leaf.IPAddresses)
	}
}

func TestSecretsConfigAndExports(t *testing.T) {
	cfg := secretsConfig("/d/openbao", "10.244.0.1:8300", 8301)
	for _, want := range []string{`storage "inmem" {}`, `address         = "10.244.0.1:8300"`, `cluster_address = "127.0.0.1:8301"`,
		`tls_key_file    = "/d/openbao/tls.key"`, "disable_mlock = true"} {
		if !strings.Contains(cfg, want) {
			t.Errorf("config lacks %q:\n%s", want, cfg)
		}
	}
	e := &Env{OpenBaoAddr: "https://10.244.0.1:8300", OpenBaoCAFile: "/d/openbao/ca.crt", OpenBaoTokenFile: "/d/openbao/root-token"}
	want := "export SLIPWAY_DEV_OPENBAO_ADDR=https://10.244.0.1:8300 SLIPWAY_DEV_OPENBAO_CA_FILE=/d/openbao/ca.crt SLIPWAY_DEV_OPENBAO_TOKEN_FILE=/d/openbao/root-token\n"
	if got := e.secretsExports(); got != want {
		t.Errorf("secretsExports() = %q, want %q", got, want)
	}
	if got := (&Env{}).secretsExports(); got != "" {
		t.Errorf("secretsExports() without a server = %q, want none", got)
	}
}
