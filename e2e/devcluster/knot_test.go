package devcluster_test

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"slipway.dev/slipway/internal/devcluster"
	"slipway.dev/slipway/internal/devcluster/devtest"
)

// The dev environment's Knot answers for dev.test, takes an update signed with the key of
// `dev env` and refuses an unsigned one; the secret's file is its owner's only and dev env
// names the file, never the secret.
func TestKnotTakesSignedUpdates(t *testing.T) {
	env := devtest.Env(t)
	if env.DNSServer == "" || env.TSIGSecretFile == "" {
		t.Fatalf("dev env has no DNS server: %+v", env)
	}
	fi, err := os.Stat(env.TSIGSecretFile)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("%s has mode %v, want 0600", env.TSIGSecretFile, fi.Mode().Perm())
	}
	b, err := os.ReadFile(env.TSIGSecretFile)
	if err != nil {
		t.Fatal(err)
	}
	secret := strings.TrimSpace(string(b))
	exports := env.Exports()
	for _, want := range []string{"SLIPWAY_DNS_SERVER=" + env.DNSServer, "SLIPWAY_TSIG_SECRET_FILE=" + env.TSIGSecretFile} {
		if !strings.Contains(exports, want) {
			t.Errorf("dev env exports lack %s:\n%s", want, exports)
		}
	}
	if strings.Contains(exports, secret) {
		t.Error("dev env exports print the TSIG secret")
	}

	name := "knot-test-" + time.Now().Format("150405.000000000") + "." + devcluster.DNSZone + "."
	name = strings.ReplaceAll(name, ".0", "-0") // one label for the time
	rr, err := dns.NewRR(name + " 60 IN A 192.0.2.7")
	if err != nil {
		t.Fatal(err)
	}
	key := dns.Fqdn(devcluster.TSIGKey)
	for _, c := range []struct {
		signed bool
		want   int
	}{{false, dns.RcodeRefused}, {true, dns.RcodeSuccess}} {
		m := new(dns.Msg)
		m.SetUpdate(dns.Fqdn(devcluster.DNSZone))
		m.Insert([]dns.RR{rr})
		cl := &dns.Client{Net: "tcp", Timeout: 5 * time.Second}
		if c.signed {
			m.SetTsig(key, dns.HmacSHA256, 300, time.Now().Unix())
			cl.TsigSecret = map[string]string{key: secret}
		}
		r, _, err := cl.Exchange(m, env.DNSServer)
		if err != nil {
			t.Fatalf("update (signed %t): %v", c.signed, err)
		}
		if r.Rcode != c.want && !(c.want == dns.RcodeRefused && r.Rcode == dns.RcodeNotAuth) {
			t.Errorf("update (signed %t) = %s, want %s", c.signed, dns.RcodeToString[r.Rcode], dns.RcodeToString[c.want])
		}
	}
	q := new(dns.Msg)
	q.SetQuestion(name, dns.TypeA)
	r, _, err := (&dns.Client{Net: "tcp"}).Exchange(q, env.DNSServer)
	if err != nil || len(r.Answer) != 1 || r.Answer[0].(*dns.A).A.String() != "192.0.2.7" {
		t.Fatalf("query %s = %v, %v; want A 192.0.2.7", name, r, err)
	}
}
