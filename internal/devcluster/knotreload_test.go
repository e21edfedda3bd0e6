package devcluster

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// A knotd started by an older slipway (slipway's key alone, update only) learns the other key
// holder and the transfer right at the next dev up, without a restart: same process, same
// port, the zone's records kept.
func TestKnotConfigurationReloaded(t *testing.T) {
	bin, err := knotd()
	if err != nil {
		t.Fatal(err)
	}
	e := &Env{Dir: t.TempDir()}
	ctx := context.Background()
	if _, err := e.ensureDNS(ctx, io.Discard); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stopDNS(e.Dir) })
	dir := filepath.Join(e.Dir, "dns")
	secret, err := tsigSecret(filepath.Join(dir, "tsig.secret"))
	if err != nil {
		t.Fatal(err)
	}
	other, err := tsigSecret(e.OtherTSIGSecretFile())
	if err != nil {
		t.Fatal(err)
	}
	// The older slipway's configuration, in force.
	conf := filepath.Join(dir, "knot.conf")
	if err := os.WriteFile(conf, []byte(knotConfig(dir, e.DNSServer, tsigKey{name: TSIGKey, secret: secret, actions: "update"})), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(filepath.Join(filepath.Dir(bin), "knotc"), "-c", conf, "reload").CombinedOutput(); err != nil {
		t.Fatalf("knotc reload: %v: %s", err, out)
	}
	pid, err := readPID(filepath.Join(e.Dir, "pids", "knotd"))
	if err != nil {
		t.Fatal(err)
	}
	update := func(key, secret, name string) int {
		rr, err := dns.NewRR(name + "." + DNSZone + ". 60 IN A 192.0.2.9")
		if err != nil {
			t.Fatal(err)
		}
		m := new(dns.Msg)
		m.SetUpdate(dns.Fqdn(DNSZone))
		m.Insert([]dns.RR{rr})
		return exchange(t, e.DNSServer, key, secret, m)
	}
	axfr := func() int {
		m := new(dns.Msg)
		m.SetAxfr(dns.Fqdn(DNSZone))
		return exchange(t, e.DNSServer, TSIGKey, secret, m)
	}
	if got := update(TSIGKey, secret, "before"); got != dns.RcodeSuccess {
		t.Fatalf("update with %s before = %s", TSIGKey, dns.RcodeToString[got])
	}
	if got := update(OtherTSIGKey, other, "other-before"); got == dns.RcodeSuccess {
		t.Fatalf("update with %s succeeded on the older configuration", OtherTSIGKey)
	}
	if got := axfr(); got == dns.RcodeSuccess {
		t.Fatal("transfer succeeded on the older configuration")
	}

	changed, err := e.ensureDNS(ctx, io.Discard)
	if err != nil || changed {
		t.Fatalf("ensureDNS on the running knotd = %t, %v; want nothing to record, no error", changed, err)
	}
	if got := update(OtherTSIGKey, other, "other-after"); got != dns.RcodeSuccess {
		t.Errorf("update with %s after the reload = %s", OtherTSIGKey, dns.RcodeToString[got])
	}
	if got := axfr(); got != dns.RcodeSuccess {
		t.Errorf("transfer with %s after the reload = %s", TSIGKey, dns.RcodeToString[got])
	}
	if now, err := readPID(filepath.Join(e.Dir, "pids", "knotd")); err != nil || now != pid || !alive(pid) {
		t.Errorf("knotd %d became %d (%v): want the same process", pid, now, err)
	}
	q := new(dns.Msg)
	q.SetQuestion("before."+DNSZone+".", dns.TypeA)
	if r, _, err := (&dns.Client{Net: "tcp", Timeout: 5 * time.Second}).Exchange(q, e.DNSServer); err != nil || len(r.Answer) != 1 {
		t.Errorf("the record made before the reload: %v, %v", r, err)
	}
}

// exchange sends m signed with key to server and returns the answer's rcode (Knot answers a
// request its ACL denies with NOTAUTH without a MAC, which is that rcode too).
func exchange(t *testing.T, server, key, secret string, m *dns.Msg) int {
	t.Helper()
	k := dns.Fqdn(key)
	m.SetTsig(k, dns.HmacSHA256, 300, time.Now().Unix())
	r, _, err := (&dns.Client{Net: "tcp", Timeout: 5 * time.Second, TsigSecret: map[string]string{k: secret}}).Exchange(m, server)
	if r == nil {
		t.Fatalf("%s signed with %s: %v", dns.OpcodeToString[m.Opcode], key, err)
	}
	return r.Rcode
}
