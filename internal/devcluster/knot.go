package devcluster

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/miekg/dns"
)

// The dev environment's authoritative DNS server (SPEC §10): Knot DNS serving DNSZone, taking
// RFC 2136 updates signed with the TSIG key TSIGKey, which may also transfer the zone (slipway
// reads it back in one AXFR). OtherTSIGKey is a second key holder that may update the zone but
// not transfer it: tests make "someone else's" records with it, and see slipway fall back to
// queries when a transfer is refused.
const (
	DNSZone      = "dev.test"
	TSIGKey      = "slipway-dev"
	OtherTSIGKey = "slipway-dev-other"
)

// OtherTSIGSecretFile is the file (0600) holding OtherTSIGKey's secret, beside TSIGSecretFile.
// dev env does not export it: slipway itself never uses that key.
func (e *Env) OtherTSIGSecretFile() string {
	return filepath.Join(e.Dir, "dns", "tsig-other.secret")
}

// errNoKnot says how to get knotd: it is a system package, not one of the pinned Go modules.
var errNoKnot = errors.New("dev environment: knotd (Knot DNS) is not installed: install the Debian/Ubuntu package `knot` (as root: apt-get install -y knot)")

// knotdFallback is where Debian installs knotd: a user's PATH often lacks /usr/sbin.
var knotdFallback = "/usr/sbin/knotd"

// knotd finds the knotd binary: on PATH, or at knotdFallback.
func knotd() (string, error) {
	if p, err := exec.LookPath("knotd"); err == nil {
		return filepath.Abs(p)
	}
	if _, err := os.Stat(knotdFallback); err == nil {
		return knotdFallback, nil
	}
	return "", errNoKnot
}

// ensureDNS starts knotd in e.Dir/dns unless it runs already, so that `dev up` on a cluster
// started before the DNS server existed adds it without touching the rest. It reuses the key
// and port of an earlier start, so clients configured from `dev env` keep working. It reports
// whether e changed (and cluster.json must be written again).
func (e *Env) ensureDNS(ctx context.Context, progress io.Writer) (bool, error) {
	bin, err := knotd()
	if err != nil {
		return false, err
	}
	dir := filepath.Join(e.Dir, "dns")
	if pid, err := readPID(filepath.Join(e.Dir, "pids", "knotd")); err == nil && alive(pid) && isExe(pid, bin) {
		if e.DNSServer != "" {
			// Started by an older slipway, maybe: its configuration may lack what this one adds.
			return false, e.reloadDNS(ctx, bin, dir)
		}
		stopPID(pid, 5*time.Second) // not recorded in cluster.json: nobody can use it
	}
	fmt.Fprintln(progress, "dev: starting Knot DNS (zone "+DNSZone+")")
	for _, d := range []string{dir, filepath.Join(dir, "zones"), filepath.Join(dir, "db"), filepath.Join(e.Dir, "pids"), filepath.Join(e.Dir, "logs")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return false, fmt.Errorf("dev environment: dns: %w", err)
		}
	}
	port := e.Ports["dns"]
	if port == 0 {
		p, err := freePorts(1)
		if err != nil {
			return false, err
		}
		port = p[0]
	}
	server := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	conf, err := e.writeKnotConfig(dir, server)
	if err != nil {
		return false, err
	}
	zone := filepath.Join(dir, "zones", DNSZone+".zone")
	if _, err := os.Stat(zone); errors.Is(err, os.ErrNotExist) {
		if err := os.WriteFile(zone, []byte(zoneFile), 0o644); err != nil {
			return false, fmt.Errorf("dev environment: dns: %w", err)
		}
	}
	pid, err := spawn(bin, []string{"-c", conf}, nil, filepath.Join(e.Dir, "logs", "knotd.log"), dir)
	if err != nil {
		return false, fmt.Errorf("dev environment: start %s: %w", bin, err)
	}
	if err := os.WriteFile(filepath.Join(e.Dir, "pids", "knotd"), []byte(strconv.Itoa(pid)+"\n"), 0o644); err != nil {
		return false, err
	}
	if err := waitSOA(ctx, server, 20*time.Second); err != nil {
		stopPID(pid, 5*time.Second)
		return false, fmt.Errorf("dev environment: knotd on %s: %w; see %s", server, err, filepath.Join(e.Dir, "logs", "knotd.log"))
	}
	if e.Ports == nil {
		e.Ports = map[string]int{}
	}
	e.Ports["dns"] = port
	e.DNSServer, e.TSIGSecretFile = server, filepath.Join(dir, "tsig.secret")
	return true, nil
}

// tsigSecret reads the dev environment's TSIG secret from path, making a new one (0600) when
// there is none: each dev environment has its own.
func tsigSecret(path string) (string, error) {
	if b, err := os.ReadFile(path); err == nil {
		return strings.TrimSpace(string(b)), nil
	}
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return "", fmt.Errorf("dev environment: tsig secret: %w", err)
	}
	s := base64.StdEncoding.EncodeToString(raw)
	if err := os.WriteFile(path, []byte(s+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("dev environment: tsig secret: %w", err)
	}
	return s, nil
}

const zoneFile = `$ORIGIN ` + DNSZone + `.
$TTL 300
@   SOA ns.` + DNSZone + `. hostmaster.` + DNSZone + `. 1 3600 600 86400 60
@   NS  ns.` + DNSZone + `.
ns  A   127.0.0.1
`

// isExe reports whether pid runs bin: a recycled PID is never signalled.
func isExe(pid int, bin string) bool {
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	return err == nil && strings.TrimSuffix(exe, " (deleted)") == bin
}

// waitSOA waits until server answers the zone's SOA over TCP.
func waitSOA(ctx context.Context, server string, limit time.Duration) error {
	c := &dns.Client{Net: "tcp", Timeout: 2 * time.Second}
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(DNSZone), dns.TypeSOA)
	deadline := time.Now().Add(limit)
	var last error
	for time.Now().Before(deadline) {
		r, _, err := c.ExchangeContext(ctx, m, server)
		if err == nil && r.Rcode == dns.RcodeSuccess && len(r.Answer) > 0 {
			return nil
		}
		last = err
		if err == nil {
			last = fmt.Errorf("SOA %s: %s", DNSZone, dns.RcodeToString[r.Rcode])
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	return fmt.Errorf("no answer after %s: %w", limit, last)
}

// stopDNS stops the knotd recorded in dir, if it runs; it reports whether it did.
func stopDNS(dir string) bool {
	pidFile := filepath.Join(dir, "pids", "knotd")
	pid, err := readPID(pidFile)
	if err != nil {
		return false
	}
	defer os.Remove(pidFile)
	bin, err := knotd()
	if err != nil || !alive(pid) || !isExe(pid, bin) {
		return false
	}
	stopPID(pid, 10*time.Second)
	return true
}

// dnsExports is the line of Exports for the DNS server: where it is and the file of the
// TSIG secret (never the secret).
func (e *Env) dnsExports() string {
	if e.DNSServer == "" {
		return ""
	}
	return fmt.Sprintf("export SLIPWAY_DNS_SERVER=%s SLIPWAY_TSIG_SECRET_FILE=%s\n", e.DNSServer, e.TSIGSecretFile)
}
