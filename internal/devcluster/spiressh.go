package devcluster

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// The spire node's sshd: Debian's OpenSSH server (openssh-server, .ci/packages) with a
// configuration of its own in <dir>/spire/ssh, on loopback, key-only, for the user running dev
// up. slipway's SPIRE lane hands the server its k8s_psat configuration through it (FR-016,
// FR-017), as it would to a real spire node.

// sshdBinary is Debian's sshd; it must be started by its absolute path (it re-executes itself).
const sshdBinary = "/usr/sbin/sshd"

// sshdConfig is the sshd's configuration: loopback, the dev environment's host key, the dev
// client key as the only way in. StrictModes is off because a data directory may sit under
// a world-writable one (a test's under /tmp), which it refuses; every file here is written
// by dev up, the keys 0600 in a 0700 directory.
func sshdConfig(sshDir string, port int, userName string) string {
	return fmt.Sprintf(`# written by slipway dev up --spire
Port %d
ListenAddress 127.0.0.1
HostKey %s
PidFile none
AuthorizedKeysFile %s
AuthenticationMethods publickey
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
AllowUsers %s
UsePAM no
StrictModes no
PermitTTY no
X11Forwarding no
AllowTcpForwarding no
AllowAgentForwarding no
AllowStreamLocalForwarding no
PermitTunnel no
PrintMotd no
LogLevel INFO
`, port, filepath.Join(sshDir, "host_ed25519"), filepath.Join(sshDir, "authorized_keys"), userName)
}

// startSSHD makes the host and client keys when missing, writes the configuration and starts
// the sshd, then waits for its banner.
func (e *Env) startSSHD(ctx context.Context, s *Spire, progress io.Writer) error {
	if _, err := os.Stat(sshdBinary); err != nil {
		return fmt.Errorf("dev cluster: spire: %s is missing: install Debian's openssh-server", sshdBinary)
	}
	u, err := user.Current()
	if err != nil {
		return fmt.Errorf("dev cluster: spire: %w", err)
	}
	dir := filepath.Join(spireDir(e.Dir), "ssh")
	hostKey, clientKey := filepath.Join(dir, "host_ed25519"), filepath.Join(dir, "id_ed25519")
	for _, k := range []string{hostKey, clientKey} {
		if err := sshKeygen(ctx, k); err != nil {
			return err
		}
	}
	pub, err := os.ReadFile(clientKey + ".pub")
	if err != nil {
		return fmt.Errorf("dev cluster: spire: %w", err)
	}
	// restrict: no forwarding, no pty; commands still run.
	if err := os.WriteFile(filepath.Join(dir, "authorized_keys"), append([]byte("restrict "), pub...), 0o600); err != nil {
		return fmt.Errorf("dev cluster: spire: %w", err)
	}
	port, err := portFor("127.0.0.1", strings.TrimPrefix(s.SSH, u.Username+"@"))
	if err != nil {
		return err
	}
	conf := filepath.Join(dir, "sshd_config")
	if err := os.WriteFile(conf, []byte(sshdConfig(dir, port, u.Username)), 0o600); err != nil {
		return fmt.Errorf("dev cluster: spire: %w", err)
	}
	if os.Geteuid() == 0 { // its privilege separation directory, which the package's service makes
		if err := os.MkdirAll("/run/sshd", 0o755); err != nil {
			return fmt.Errorf("dev cluster: spire: %w", err)
		}
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	fmt.Fprintf(progress, "dev: starting the SPIRE node's sshd on %s\n", addr)
	pid, err := e.startExec(sshdProc, sshdBinary, []string{"-D", "-e", "-f", conf})
	if err != nil {
		return err
	}
	hostPub, err := os.ReadFile(hostKey + ".pub")
	if err != nil {
		return fmt.Errorf("dev cluster: spire: %w", err)
	}
	f := strings.Fields(string(hostPub))
	if len(f) < 2 {
		return fmt.Errorf("dev cluster: spire: %s.pub: not a public key", hostKey)
	}
	s.SSH = u.Username + "@" + addr
	s.HostKey = fmt.Sprintf("[127.0.0.1]:%d %s %s", port, f[0], f[1])
	s.SSHKey = clientKey
	return waitFor(ctx, 30*time.Second, "sshd (see "+filepath.Join(e.Dir, "logs", sshdProc+".log")+")", func() (bool, string) {
		if !alive(pid) {
			return false, "it exited"
		}
		if err := sshBanner(addr); err != nil {
			return false, err.Error()
		}
		return true, ""
	})
}

// sshKeygen makes an ed25519 key pair at path (path.pub) unless it is there.
func sshKeygen(ctx context.Context, path string) error {
	if _, err := os.Stat(path + ".pub"); err == nil {
		return nil
	}
	_ = os.Remove(path)
	out, err := exec.CommandContext(ctx, "ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "slipway-dev", "-f", path).CombinedOutput()
	if err != nil {
		return fmt.Errorf("dev cluster: spire: ssh-keygen %s: %w: %s", filepath.Base(path), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// sshBanner checks that an SSH server answers at addr.
func sshBanner(addr string) error {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if !strings.HasPrefix(line, "SSH-2.0-") {
		return fmt.Errorf("%s answers %q, not SSH", addr, strings.TrimSpace(line))
	}
	return nil
}
