package devcluster_test

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"slipway.dev/slipway/internal/devcluster"
	"slipway.dev/slipway/internal/devcluster/devtest"
)

// Each key of the dev environment's Knot may do what SPEC §10 and the tests need: slipway's
// key updates and transfers the zone; the other key holder's updates it but is refused a
// transfer; without a key neither. The other key's secret is in a file of its own, its
// owner's only, and dev env prints neither it nor the secret.
func TestKnotKeys(t *testing.T) {
	env := devtest.Env(t)
	secrets := map[string]string{}
	for key, file := range map[string]string{devcluster.TSIGKey: env.TSIGSecretFile, devcluster.OtherTSIGKey: env.OtherTSIGSecretFile()} {
		fi, err := os.Stat(file)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %v, want 0600", file, fi.Mode().Perm())
		}
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		secrets[key] = strings.TrimSpace(string(b))
	}
	if secrets[devcluster.TSIGKey] == secrets[devcluster.OtherTSIGKey] {
		t.Error("the two keys share a secret")
	}
	if ex := env.Exports(); strings.Contains(ex, secrets[devcluster.OtherTSIGKey]) || strings.Contains(ex, env.OtherTSIGSecretFile()) {
		t.Errorf("dev env exports name the other key holder's secret:\n%s", ex)
	}
	for _, c := range []struct {
		key              string // "" unsigned
		update, transfer bool
	}{
		{devcluster.TSIGKey, true, true},
		{devcluster.OtherTSIGKey, true, false},
		{"", false, false},
	} {
		t.Run(fmt.Sprintf("key %q", c.key), func(t *testing.T) {
			name := fmt.Sprintf("keys-%d.%s.", time.Now().UnixNano(), devcluster.DNSZone)
			rr, err := dns.NewRR(name + " 60 IN A 192.0.2.8")
			if err != nil {
				t.Fatal(err)
			}
			u := new(dns.Msg)
			u.SetUpdate(dns.Fqdn(devcluster.DNSZone))
			u.Insert([]dns.RR{rr})
			if got := rcode(t, env.DNSServer, c.key, secrets[c.key], u); (got == dns.RcodeSuccess) != c.update {
				t.Errorf("update = %s, want it allowed: %t", dns.RcodeToString[got], c.update)
			}
			x := new(dns.Msg)
			x.SetAxfr(dns.Fqdn(devcluster.DNSZone))
			if got := rcode(t, env.DNSServer, c.key, secrets[c.key], x); (got == dns.RcodeSuccess) != c.transfer {
				t.Errorf("transfer = %s, want it allowed: %t", dns.RcodeToString[got], c.transfer)
			}
		})
	}
}

// rcode sends m to server, signed with key (unless ""), and returns the rcode of the first
// message of the answer.
func rcode(t *testing.T, server, key, secret string, m *dns.Msg) int {
	t.Helper()
	cl := &dns.Client{Net: "tcp", Timeout: 5 * time.Second}
	if key != "" {
		k := dns.Fqdn(key)
		m.SetTsig(k, dns.HmacSHA256, 300, time.Now().Unix())
		cl.TsigSecret = map[string]string{k: secret}
	}
	conn, err := cl.Dial(server)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	r, _, err := cl.ExchangeWithConn(m, conn)
	if err != nil && r != nil {
		// Knot refuses a signed request its ACL denies with NOTAUTH and TSIG error BADKEY, an
		// answer without a MAC to verify.
		return r.Rcode
	}
	if err != nil {
		t.Fatalf("%s signed with %q: %v", dns.OpcodeToString[m.Opcode], key, err)
	}
	return r.Rcode
}
