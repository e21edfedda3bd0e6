package devcluster

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// SpireHostAddr is the address the SPIRE server listens on in slot 0 (hostshare.go; another
// slot's is HostShare.SpireAddr): one of TEST-NET-2 (RFC 5737), added to the loopback
// interface as a /32. The host reaches it as its own; the real node's
// pods through their default route, the bridge's gateway (containerd.go), which delivers a
// packet for any of the host's addresses. Neither 127.0.0.1 (a pod's own loopback) nor the
// gateway's address (the bridge comes and goes with the real node) serves both.
const SpireHostAddr = "198.51.100.1"

// adminSVIDTTL is the admin X.509-SVID's lifetime; dev up mints a new one when less than
// adminSVIDRenew of it is left. The CA lives for a year (ca_ttl), so neither it nor the
// bundle changes in a dev environment's life.
const (
	adminSVIDTTL   = 90 * 24 * time.Hour
	adminSVIDRenew = 7 * 24 * time.Hour
)

// spireServerConfig is the server's configuration: sqlite, KeyManager disk (a restart keeps
// the CA, and so the bundle the agents hold), k8s_psat reconfigurable from its data file.
func spireServerConfig(d, host string, port int, socket string) string {
	conf := filepath.Join(d, "conf")
	data := filepath.Join(d, "data")
	return fmt.Sprintf(`server {
  bind_address = %q
  bind_port = "%d"
  socket_path = %q
  trust_domain = %q
  data_dir = %q
  log_level = "INFO"
  ca_ttl = "8760h"
  default_x509_svid_ttl = "1h"
  admin_ids = [%q]
  experimental {
    cache_reload_interval = "1s"
  }
}

plugins {
  DataStore "sql" {
    plugin_data {
      database_type = "sqlite3"
      connection_string = %q
    }
  }
  KeyManager "disk" {
    plugin_data {
      keys_path = %q
    }
  }
  NodeAttestor "k8s_psat" {
    plugin_data_file = %q
  }
}
`, host, port, socket, SpireTrustDomain, data, SpireAdminID,
		filepath.Join(data, "datastore.sqlite3"), filepath.Join(data, "keys.json"), filepath.Join(conf, "k8s_psat.hcl"))
}

// spireSocket is the server's local API socket: in its data dir unless the path is too long
// for a Unix socket (108 bytes), then under /tmp, named after the data dir.
func spireSocket(d string) string {
	p := filepath.Join(d, "data", "api.sock")
	if len(p) < 100 {
		return p
	}
	h := sha256.Sum256([]byte(d))
	return "/tmp/slipway-spire-" + hex.EncodeToString(h[:6]) + ".sock"
}

// startSpireServer writes the server's configuration (and an empty k8s_psat.hcl when there is
// none: the lane's files stay across restarts), starts it, records its PID where the lane
// signals it, and waits for it to answer.
func (e *Env) startSpireServer(ctx context.Context, bin string, s *Spire, progress io.Writer) error {
	d := spireDir(e.Dir)
	host, err := e.ensureSpireAddr(progress)
	if err != nil {
		return err
	}
	port, err := portFor(host, s.Addr)
	if err != nil {
		return err
	}
	s.Addr = net.JoinHostPort(host, strconv.Itoa(port))
	s.ConfigDir = filepath.Join(d, "conf")
	psat := filepath.Join(s.ConfigDir, "k8s_psat.hcl")
	if _, err := os.Stat(psat); err != nil {
		if err := os.WriteFile(psat, []byte("clusters = {}\n"), 0o600); err != nil {
			return fmt.Errorf("dev cluster: spire: %w", err)
		}
	}
	socket := spireSocket(d)
	conf := filepath.Join(s.ConfigDir, "server.conf")
	if err := os.WriteFile(conf, []byte(spireServerConfig(d, host, port, socket)), 0o600); err != nil {
		return fmt.Errorf("dev cluster: spire: %w", err)
	}
	fmt.Fprintf(progress, "dev: starting the SPIRE server %s (trust domain %s) on %s\n", SpireVersion, SpireTrustDomain, s.Addr)
	pid, err := e.startExec(spireServerProc, filepath.Join(bin, "spire-server"), []string{"run", "-config", conf})
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(s.ConfigDir, "spire-server.pid"), []byte(strconv.Itoa(pid)+"\n"), 0o644); err != nil {
		return fmt.Errorf("dev cluster: spire: %w", err)
	}
	return waitFor(ctx, time.Minute, "SPIRE server healthy (see "+filepath.Join(e.Dir, "logs", spireServerProc+".log")+")", func() (bool, string) {
		if !alive(pid) {
			return false, "it exited"
		}
		if err := spireCLI(ctx, bin, nil, "healthcheck", "-socketPath", socket); err != nil {
			return false, err.Error()
		}
		return true, ""
	})
}

// spireCredentials writes the admin X.509-SVID (minted anew when missing or near its end) and
// the server's trust bundle, and names them in s.
func (e *Env) spireCredentials(ctx context.Context, bin string, s *Spire) error {
	d := spireDir(e.Dir)
	admin := filepath.Join(d, "admin")
	s.AdminCert, s.AdminKey, s.Bundle = filepath.Join(admin, "svid.pem"), filepath.Join(admin, "key.pem"), filepath.Join(admin, "bundle.pem")
	socket := spireSocket(d)
	if certValidFor(s.AdminCert) < adminSVIDRenew {
		if err := spireCLI(ctx, bin, nil, "x509", "mint", "-socketPath", socket, "-spiffeID", SpireAdminID,
			"-ttl", adminSVIDTTL.String(), "-write", admin); err != nil {
			return fmt.Errorf("dev cluster: spire: mint the admin SVID: %w", err)
		}
		if err := os.Chmod(s.AdminKey, 0o600); err != nil {
			return fmt.Errorf("dev cluster: spire: %w", err)
		}
	}
	var bundle bytes.Buffer
	if err := spireCLI(ctx, bin, &bundle, "bundle", "show", "-socketPath", socket, "-format", "pem"); err != nil {
		return fmt.Errorf("dev cluster: spire: bundle: %w", err)
	}
	if old, err := os.ReadFile(s.Bundle); err == nil && bytes.Equal(old, bundle.Bytes()) {
		return nil
	}
	return writeAtomic(s.Bundle, bundle.Bytes(), 0o644)
}

// certValidFor is how long the first certificate in the PEM file at path stays valid; 0 when
// there is none.
func certValidFor(path string) time.Duration {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	blk, _ := pem.Decode(b)
	if blk == nil {
		return 0
	}
	c, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		return 0
	}
	return time.Until(c.NotAfter)
}

// spireCLI runs spire-server's command line (against the local socket); stdout goes to out.
func spireCLI(ctx context.Context, bin string, out io.Writer, args ...string) error {
	cmd := exec.CommandContext(ctx, filepath.Join(bin, "spire-server"), args...)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = out, &stderr
	if out == nil {
		cmd.Stdout = &stderr
	}
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("spire-server %s: %w: %s", args[0], err, strings.TrimSpace(stderr.String()))
	}
	return nil
}

// ensureSpireAddr puts the slot's SPIRE address on the loopback interface unless it is there
// (recorded as this environment's first), and returns it; without root (or ip) it returns
// 127.0.0.1 and says that pods cannot reach the server.
func (e *Env) ensureSpireAddr(progress io.Writer) (string, error) {
	addr := e.hostShare().SpireAddr
	if hasAddr(addr) {
		return addr, e.made(Made{madeLoAddr, addr})
	}
	if os.Geteuid() != 0 {
		fmt.Fprintf(progress, "dev: warning: not root, so the SPIRE server listens on 127.0.0.1, which the real node's pods cannot reach\n")
		return "127.0.0.1", nil
	}
	if err := e.made(Made{madeLoAddr, addr}); err != nil {
		return "", err
	}
	if out, err := exec.Command("ip", "addr", "add", addr+"/32", "dev", "lo").CombinedOutput(); err != nil {
		return "", fmt.Errorf("dev cluster: spire: add %s to lo: %w: %s", addr, err, strings.TrimSpace(string(out)))
	}
	return addr, nil
}

func hasAddr(ip string) bool {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return false
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.String() == ip {
			return true
		}
	}
	return false
}

// portFor returns the port of prev (host:port) when it is free on host again, so a restarted
// part keeps its address; otherwise a free one.
func portFor(host, prev string) (int, error) {
	if _, p, err := net.SplitHostPort(prev); err == nil {
		if l, err := net.Listen("tcp", net.JoinHostPort(host, p)); err == nil {
			l.Close()
			return strconv.Atoi(p)
		}
	}
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return 0, fmt.Errorf("dev cluster: find a free port on %s: %w", host, err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// writeAtomic writes b to path through a temporary file and a rename.
func writeAtomic(path string, b []byte, mode os.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Chmod(mode); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}
