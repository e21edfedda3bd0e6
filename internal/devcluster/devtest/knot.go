package devtest

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	mdns "github.com/miekg/dns"
)

// KnotKey is the TSIG key (hmac-sha256) of a Knot that Knot starts: it may update and transfer
// every zone.
const KnotKey = "slipway-test"

// Knot starts a Knot DNS of the test's own serving zones (the dev environment's serves one
// zone, and is shared), and returns its address and the key's secret (base64). It is stopped
// when the test ends. Tests of what spans zones (a group whose publish.zone changes) use it.
func Knot(t testing.TB, zones ...string) (server, secret string) {
	t.Helper()
	bin, err := exec.LookPath("knotd")
	if err != nil {
		bin = "/usr/sbin/knotd"
	}
	// Knot's control socket lives in its rundir: a test's temporary directory may be too
	// long a path for a socket.
	dir, err := os.MkdirTemp("", "knot")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Mkdir(filepath.Join(dir, "db"), 0o700); err != nil {
		t.Fatal(err)
	}
	raw := make([]byte, 32)
	_, _ = rand.Read(raw)
	secret = base64.StdEncoding.EncodeToString(raw)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	server = l.Addr().String()
	l.Close()
	host, port, _ := net.SplitHostPort(server)
	var conf strings.Builder
	fmt.Fprintf(&conf, "server:\n    rundir: %[1]s\n    listen: %[2]s@%[3]s\nlog:\n  - target: stderr\n    any: warning\n"+
		"database:\n    storage: %[1]s/db\nkey:\n  - id: %[4]s\n    algorithm: hmac-sha256\n    secret: %[5]s\n"+
		"acl:\n  - id: %[4]s\n    key: %[4]s\n    action: [update, transfer]\n"+
		"template:\n  - id: default\n    storage: %[1]s\n    file: \"%%s.zone\"\n    zonefile-sync: -1\nzone:\n", dir, host, port, KnotKey, secret)
	for _, z := range zones {
		fmt.Fprintf(&conf, "  - domain: %s\n    acl: [%s]\n", z, KnotKey)
		zone := fmt.Sprintf("$ORIGIN %[1]s.\n$TTL 300\n@ SOA ns.%[1]s. hostmaster.%[1]s. 1 3600 600 86400 60\n@ NS ns.%[1]s.\nns A 127.0.0.1\n", z)
		if err := os.WriteFile(filepath.Join(dir, z+".zone"), []byte(zone), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(dir, "knot.conf")
	if err := os.WriteFile(path, []byte(conf.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-c", path)
	log, _ := os.Create(filepath.Join(dir, "knotd.log"))
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		log.Close()
	})
	WaitFor(t, 20*time.Second, "knotd on "+server+" answers", func() (bool, string) {
		for _, z := range zones {
			m := new(mdns.Msg)
			m.SetQuestion(mdns.Fqdn(z), mdns.TypeSOA)
			r, _, err := (&mdns.Client{Net: "tcp", Timeout: time.Second}).ExchangeContext(context.Background(), m, server)
			if err != nil || r.Rcode != mdns.RcodeSuccess || len(r.Answer) == 0 {
				b, _ := os.ReadFile(filepath.Join(dir, "knotd.log"))
				return false, fmt.Sprintf("SOA %s: %v %v; log: %s", z, r, err, b)
			}
		}
		return true, ""
	})
	return server, secret
}
