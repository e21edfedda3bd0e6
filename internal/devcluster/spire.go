package devcluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// The SPIRE parts (dev up --spire, issue 37): a real SPIRE server, the spire node's sshd that
// hands it its k8s_psat configuration, and an image with spire-agent for the nodes that attest
// to it. docs/dev-cluster.md describes them; /work/wt/_notes/spire-contract.md (the lane's side)
// the layout of the server's configuration directory.

// SpireVersion is the SPIRE release the dev environment runs (tools/spire).
const SpireVersion = "v1.13.3"

// SpireTrustDomain is the dev SPIRE server's trust domain.
const SpireTrustDomain = "slipway.test"

// SpireAdminID is the SPIFFE ID of the admin X.509-SVID dev up mints: the server's admin_ids
// name it, so it may use the registration API over TCP.
const SpireAdminID = "spiffe://" + SpireTrustDomain + "/slipway-dev/admin"

// spireTools are SPIRE's server and agent, from one module into one cache directory. The
// server needs cgo (its sqlite datastore binds SQLite); the agent is built with cgo too, so
// that it compiles from the packages the server's build left in the Go build cache, and
// linked statically (glibc's libc.a, from gcc's libc6-dev): the agent image has no C library.
var spireTools = []tool{
	{module: "spire", from: "github.com/spiffe/spire " + SpireVersion, pkgs: []string{"github.com/spiffe/spire/cmd/spire-server"},
		bins: []string{"spire-server"}, ldflags: spireLdflags, own: true, spire: true, cgo: true},
	{module: "spire", from: "github.com/spiffe/spire " + SpireVersion, pkgs: []string{"github.com/spiffe/spire/cmd/spire-agent"},
		bins: []string{"spire-agent"}, ldflags: spireLdflags + " -linkmode external -extldflags -static", own: true, spire: true, cgo: true},
}

// spireLdflags: no version stamp (-X .../version.gittag=v1.13.3 made the server panic: SPIRE
// parses its version as semver); unstamped the binaries say 1.13.3-dev-unk.
const spireLdflags = "-s -w"

const (
	spireServerProc = "spire-server"
	sshdProc        = "sshd"
)

// Spire is what dev up --spire started: the values `dev env` exports (Exports) and the
// files behind them. It is kept in <dir>/spire/spire.json, apart from cluster.json, which a
// slipway that does not know these parts writes without them.
type Spire struct {
	Addr       string `json:"addr"`       // the server's gRPC API, host:port (SLIPWAY_DEV_SPIRE_ADDR)
	ConfigDir  string `json:"configDir"`  // the server's configuration dir (the contract's configDir)
	AdminCert  string `json:"adminCert"`  // the admin X.509-SVID, PEM
	AdminKey   string `json:"adminKey"`   // its key, PEM, 0600
	Bundle     string `json:"bundle"`     // the server's trust bundle, PEM
	SSH        string `json:"ssh"`        // user@127.0.0.1:port of the spire node's sshd
	HostKey    string `json:"hostKey"`    // the sshd's host key, one known_hosts line
	SSHKey     string `json:"sshKey"`     // the client key the sshd authorises, 0600
	AgentImage string `json:"agentImage"` // busybox and spire-agent, by digest in the dev registry
}

// spireDir holds the SPIRE parts' files: conf (the configDir), data, admin, ssh, spire.json.
func spireDir(dir string) string { return filepath.Join(dir, "spire") }

// Spire returns the SPIRE parts of the cluster, or an error saying they do not run.
func (e *Env) Spire() (*Spire, error) {
	b, err := os.ReadFile(filepath.Join(spireDir(e.Dir), "spire.json"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("dev cluster in %s has no SPIRE server: start it with slipway dev up --spire", e.Dir)
	}
	if err != nil {
		return nil, fmt.Errorf("dev cluster: %w", err)
	}
	var s Spire
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("dev cluster: spire.json: %w", err)
	}
	for _, p := range []string{spireServerProc, sshdProc} {
		if !extraRunning(e.Dir, p) {
			return &s, fmt.Errorf("dev cluster in %s: %s is not running: start it with slipway dev up --spire", e.Dir, p)
		}
	}
	return &s, nil
}

// spireExports are the lines of Exports for the SPIRE parts (the contract's variables), none
// when they do not run.
func (e *Env) spireExports() string {
	s, err := e.Spire()
	if err != nil {
		return ""
	}
	return fmt.Sprintf("export SLIPWAY_DEV_SPIRE_ADDR=%s SPIRE_ADMIN_CERT_FILE=%s SPIRE_ADMIN_KEY_FILE=%s SPIRE_TRUST_BUNDLE_FILE=%s\n",
		s.Addr, s.AdminCert, s.AdminKey, s.Bundle) +
		fmt.Sprintf("export SLIPWAY_DEV_SPIRE_SSH=%s SLIPWAY_DEV_SPIRE_HOST_KEY=%s SSH_PRIVATE_KEY_FILE=%s\n",
			s.SSH, strconv.Quote(s.HostKey), s.SSHKey) +
		fmt.Sprintf("export SLIPWAY_DEV_SPIRE_CONFIG_DIR=%s SLIPWAY_DEV_SPIRE_AGENT_IMAGE=%s\n", s.ConfigDir, s.AgentImage)
}

// buildSpire builds SPIRE's server and agent when they are not cached (about 8 minutes on 2
// cores the first time) and returns their bin dir.
func buildSpire(ctx context.Context, progress io.Writer) (string, error) {
	cache, err := toolCacheDir(spireTools[0])
	if err != nil {
		return "", err
	}
	return ensureBuilt(ctx, cache, spireTools, progress)
}

// ensureSpire starts whichever SPIRE part is not running, beside a running cluster, and
// records them in spire.json. With both running it starts nothing; it refreshes the admin
// SVID when it nears its end and pushes the agent image when the registry lacks it.
func (e *Env) ensureSpire(ctx context.Context, bin string, progress io.Writer) error {
	start := time.Now()
	started := false
	d := spireDir(e.Dir)
	for _, sub := range []string{"conf/k8s_psat.d", "data", "admin", "ssh"} {
		if err := os.MkdirAll(filepath.Join(d, sub), 0o700); err != nil {
			return fmt.Errorf("dev cluster: spire: %w", err)
		}
	}
	var s Spire
	if b, err := os.ReadFile(filepath.Join(d, "spire.json")); err == nil {
		_ = json.Unmarshal(b, &s)
	}
	if !extraRunning(e.Dir, spireServerProc) {
		if err := e.startSpireServer(ctx, bin, &s, progress); err != nil {
			return err
		}
		started = true
	}
	if err := e.spireCredentials(ctx, bin, &s); err != nil {
		return err
	}
	if !extraRunning(e.Dir, sshdProc) {
		if err := e.startSSHD(ctx, &s, progress); err != nil {
			return err
		}
		started = true
	}
	ref, err := e.pushAgentImage(ctx, filepath.Join(bin, "spire-agent"), progress)
	if err != nil {
		return err
	}
	s.AgentImage = ref
	if err := writeJSON(filepath.Join(d, "spire.json"), s); err != nil {
		return err
	}
	if started {
		fmt.Fprintf(progress, "dev: SPIRE server %s at %s, its sshd at %s (ready in %s)\n", SpireVersion, s.Addr, s.SSH, time.Since(start).Round(100*time.Millisecond))
	}
	return nil
}

// stopSpire stops the SPIRE server and the sshd of dir and removes the server's address when
// this environment put it on lo (hostshare.go); it reports whether it stopped anything.
func stopSpire(dir string) bool {
	stopped := false
	for _, p := range []string{sshdProc, spireServerProc} {
		pidFile := filepath.Join(dir, "pids", p)
		if pid, err := readPID(pidFile); err == nil && alive(pid) && runsBinary(pid, p) {
			stopPID(pid, 10*time.Second)
			stopped = true
		}
		_ = os.Remove(pidFile)
	}
	undoHostKinds(dir, io.Discard, madeLoAddr)
	return stopped
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("dev cluster: %w", err)
	}
	return nil
}
