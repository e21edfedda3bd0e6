package devcluster

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// writeKnotConfig writes Knot's configuration for server into dir (readable by its owner only:
// it holds the secrets), making the keys' secrets on the first start, and returns its path.
func (e *Env) writeKnotConfig(dir, server string) (string, error) {
	conf, err := e.knotConfigFor(dir, server)
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "knot.conf")
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		return "", fmt.Errorf("dev environment: dns: %w", err)
	}
	return path, nil
}

// knotConfigFor is the configuration Knot runs with: the zone, slipway's key (update and
// transfer) and the other key holder's (update only).
func (e *Env) knotConfigFor(dir, server string) (string, error) {
	secret, err := tsigSecret(filepath.Join(dir, "tsig.secret"))
	if err != nil {
		return "", err
	}
	other, err := tsigSecret(e.OtherTSIGSecretFile())
	if err != nil {
		return "", err
	}
	return knotConfig(dir, server,
		tsigKey{name: TSIGKey, secret: secret, actions: "[update, transfer]"},
		tsigKey{name: OtherTSIGKey, secret: other, actions: "update"}), nil
}

// reloadDNS brings a running knotd's configuration up to date: a knotd started by an older
// slipway keeps its zone and its port, and learns the keys and rights added since. knotc
// reload answers once the new configuration is in force; an unchanged one is left alone.
func (e *Env) reloadDNS(ctx context.Context, knotd, dir string) error {
	want, err := e.knotConfigFor(dir, e.DNSServer)
	if err != nil {
		return err
	}
	path := filepath.Join(dir, "knot.conf")
	if have, err := os.ReadFile(path); err == nil && string(have) == want {
		return nil
	}
	if err := os.WriteFile(path, []byte(want), 0o600); err != nil {
		return fmt.Errorf("dev environment: dns: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	knotc := filepath.Join(filepath.Dir(knotd), "knotc")
	if out, err := exec.CommandContext(ctx, knotc, "-c", path, "reload").CombinedOutput(); err != nil {
		return fmt.Errorf("dev environment: reload knotd's configuration %s: %w: %s", path, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// tsigKey is one key of Knot's configuration and what it may do with the zone.
type tsigKey struct {
	name, secret string
	actions      string // Knot's acl action list
}

func knotConfig(dir, server string, keys ...tsigKey) string {
	host, port, _ := net.SplitHostPort(server)
	var b strings.Builder
	fmt.Fprintf(&b, `server:
    rundir: %[1]s
    pidfile: %[1]s/knot.pid
    listen: %[2]s@%[3]s
log:
  - target: stderr
    any: notice
database:
    storage: %[1]s/db
`, dir, host, port)
	var ids []string
	b.WriteString("key:\n")
	for _, k := range keys {
		fmt.Fprintf(&b, "  - id: %s\n    algorithm: hmac-sha256\n    secret: %s\n", k.name, k.secret)
	}
	b.WriteString("acl:\n")
	for _, k := range keys {
		fmt.Fprintf(&b, "  - id: %[1]s\n    key: %[1]s\n    action: %[2]s\n", k.name, k.actions)
		ids = append(ids, k.name)
	}
	fmt.Fprintf(&b, `template:
  - id: default
    storage: %[1]s/zones
    file: "%%s.zone"
    zonefile-sync: -1
zone:
  - domain: %[2]s
    acl: [%[3]s]
`, dir, DNSZone, strings.Join(ids, ", "))
	return b.String()
}
