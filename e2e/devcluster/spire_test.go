package devcluster_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"slipway.dev/slipway/internal/devcluster"
	"slipway.dev/slipway/internal/devcluster/devtest"
	"slipway.dev/slipway/internal/kube"
)

// The SPIRE parts of dev up --spire, against the real server, sshd, registry and node.
func TestSpire(t *testing.T) {
	env, s := devtest.Spire(t)
	t.Run("dev env exports the contract's variables", func(t *testing.T) {
		exports := env.Exports()
		for v, want := range map[string]string{
			"SLIPWAY_DEV_SPIRE_ADDR": s.Addr, "SPIRE_ADMIN_CERT_FILE": s.AdminCert, "SPIRE_ADMIN_KEY_FILE": s.AdminKey,
			"SPIRE_TRUST_BUNDLE_FILE": s.Bundle, "SLIPWAY_DEV_SPIRE_SSH": s.SSH, "SLIPWAY_DEV_SPIRE_HOST_KEY": strconv.Quote(s.HostKey),
			"SSH_PRIVATE_KEY_FILE": s.SSHKey, "SLIPWAY_DEV_SPIRE_CONFIG_DIR": s.ConfigDir, "SLIPWAY_DEV_SPIRE_AGENT_IMAGE": s.AgentImage,
		} {
			if want == "" || want == `""` || !strings.Contains(exports, " "+v+"="+want) && !strings.Contains(exports, "export "+v+"="+want) {
				t.Errorf("dev env: no %s=%s in\n%s", v, want, exports)
			}
		}
		for _, f := range []string{s.AdminKey, s.SSHKey} {
			st, err := os.Stat(f)
			if err != nil {
				t.Fatal(err)
			}
			if st.Mode().Perm() != 0o600 {
				t.Errorf("%s: mode %v, want 0600", f, st.Mode().Perm())
			}
		}
	})
	t.Run("admin SVID over TCP", func(t *testing.T) { spireAdmin(t, s) })
	t.Run("ssh with the dev key", func(t *testing.T) { spireSSH(t, s) })
	t.Run("agent image", func(t *testing.T) { spireAgentImage(t, s) })
	t.Run("pod on the real node reaches the server", func(t *testing.T) {
		c, err := kube.New(env.Kubeconfig, "")
		if err != nil {
			t.Fatal(err)
		}
		spireFromPod(t, env, c, s)
	})
}

// spireAdmin: the registration API answers CountEntries over TCP to the admin X.509-SVID, and
// refuses a caller without it (PermissionDenied): the SVID is what grants the access. The
// server's certificate is checked against the trust bundle and its SPIFFE ID.
func spireAdmin(t *testing.T, s *devcluster.Spire) {
	cert, err := tls.LoadX509KeyPair(s.AdminCert, s.AdminKey)
	if err != nil {
		t.Fatal(err)
	}
	bundle, err := os.ReadFile(s.Bundle)
	if err != nil {
		t.Fatal(err)
	}
	const count = "/spire.api.server.entry.v1.Entry/CountEntries"
	for _, tc := range []struct {
		name   string
		certs  []tls.Certificate
		status string
	}{
		{"admin SVID", []tls.Certificate{cert}, "0"},
		{"no client certificate", nil, "7"}, // PermissionDenied
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := grpcUnary(t, s.Addr, bundle, tc.certs, count)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.status {
				t.Errorf("%s = grpc-status %s, want %s", count, got, tc.status)
			}
		})
	}
}

// grpcUnary calls method with an empty request message over HTTP/2 (gRPC's wire format, which
// needs no gRPC library) and returns the call's grpc-status.
func grpcUnary(t *testing.T, addr string, bundle []byte, certs []tls.Certificate, method string) (string, error) {
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(bundle) {
		t.Fatalf("trust bundle: no certificate")
	}
	serverID := "spiffe://" + devcluster.SpireTrustDomain + "/spire/server"
	cfg := &tls.Config{
		Certificates: certs,
		NextProtos:   []string{"h2"},
		// A SPIFFE server certificate names its SPIFFE ID, not a host: verify the chain against
		// the bundle and the ID instead of a host name.
		InsecureSkipVerify: true,
		VerifyPeerCertificate: func(raw [][]byte, _ [][]*x509.Certificate) error {
			var chain []*x509.Certificate
			for _, r := range raw {
				c, err := x509.ParseCertificate(r)
				if err != nil {
					return err
				}
				chain = append(chain, c)
			}
			inter := x509.NewCertPool()
			for _, c := range chain[1:] {
				inter.AddCert(c)
			}
			if _, err := chain[0].Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}); err != nil {
				return err
			}
			for _, u := range chain[0].URIs {
				if u.String() == serverID {
					return nil
				}
			}
			return fmt.Errorf("server certificate names %v, not %s", chain[0].URIs, serverID)
		},
	}
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg, ForceAttemptHTTP2: true}}
	frame := make([]byte, 5) // not compressed, a message of 0 bytes
	req, err := http.NewRequest(http.MethodPost, "https://"+addr+method, bytes.NewReader(frame))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/grpc")
	req.Header.Set("TE", "trailers")
	resp, err := hc.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.ProtoMajor != 2 {
		return "", fmt.Errorf("answered over %s, not HTTP/2", resp.Proto)
	}
	status := resp.Trailer.Get("Grpc-Status")
	if status == "" { // a trailers-only answer carries it in the headers
		status = resp.Header.Get("Grpc-Status")
	}
	if status == "0" && (len(body) < 5 || int(binary.BigEndian.Uint32(body[1:5])) != len(body)-5) {
		return "", fmt.Errorf("answer %x is not one gRPC message", body)
	}
	t.Logf("%s: HTTP %s, grpc-status %s %s", method, resp.Status, status, resp.Trailer.Get("Grpc-Message")+resp.Header.Get("Grpc-Message"))
	return status, nil
}

// spireSSH: ssh with the dev client key and the exported host key (checked strictly) runs a
// script sent on stdin as the contract's lane does; the user may write the configuration dir
// and signal the server. A known_hosts line of another key is refused.
func spireSSH(t *testing.T, s *devcluster.Spire) {
	userHost, port, err := net.SplitHostPort(s.SSH)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	run := func(knownHosts, script string) (string, error) {
		kh := filepath.Join(dir, "known_hosts")
		if err := os.WriteFile(kh, []byte(knownHosts+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("ssh", "-F", "/dev/null", "-i", s.SSHKey, "-p", port,
			"-o", "IdentitiesOnly=yes", "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=yes",
			"-o", "UserKnownHostsFile="+kh, "-o", "GlobalKnownHostsFile=/dev/null", userHost, "sh", "-s", "--", s.ConfigDir)
		cmd.Stdin = strings.NewReader(script)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	script := `set -e
test -w "$1"
kill -0 "$(cat "$1/spire-server.pid")"
test -f "$1/k8s_psat.hcl"
echo "ok $(id -un)"
`
	out, err := run(s.HostKey, script)
	if err != nil || !strings.HasPrefix(out, "ok ") {
		t.Fatalf("ssh %s: %v: %q", s.SSH, err, out)
	}
	other := filepath.Join(dir, "other")
	if b, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", other).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen: %v: %s", err, b)
	}
	pub, err := os.ReadFile(other + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(pub))
	wrong := strings.Fields(s.HostKey)[0] + " " + f[0] + " " + f[1]
	if out, err := run(wrong, script); err == nil || !strings.Contains(out, "Host key verification failed") {
		t.Errorf("ssh with another host key in known_hosts: %v, %q; want Host key verification failed", err, out)
	}
}

// spireAgentImage: the exported image is in the dev registry by digest and holds the busybox
// shell and spire-agent.
func spireAgentImage(t *testing.T, s *devcluster.Spire) {
	ref, err := name.ParseReference(s.AgentImage, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := ref.(name.Digest); !ok {
		t.Errorf("SLIPWAY_DEV_SPIRE_AGENT_IMAGE = %s, want a reference by digest", s.AgentImage)
	}
	img, err := remote.Image(ref, remote.WithContext(context.Background()))
	if err != nil {
		t.Fatal(err)
	}
	entries := layerHeaders(t, img)
	for _, f := range []string{"bin/sh", strings.TrimPrefix(devcluster.SpireAgentPath, "/")} {
		if entries[f] == nil {
			t.Errorf("agent image %s has no %s", s.AgentImage, f)
		}
	}
}

// spireFromPod: a pod of the agent image on the real node connects to the server's address
// (SLIPWAY_DEV_SPIRE_ADDR) and runs spire-agent.
func spireFromPod(t *testing.T, env *devcluster.Env, c *kube.Client, s *devcluster.Spire) {
	nodeName := realNode(t, env)
	ctx := context.Background()
	ns := namespace(t, c, "spire-reach")
	host, port, err := net.SplitHostPort(s.Addr)
	if err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "reach", Namespace: ns},
		Spec: corev1.PodSpec{
			HostUsers:                     ptr.To(false),
			RestartPolicy:                 corev1.RestartPolicyNever,
			NodeSelector:                  map[string]string{devcluster.RealNodeLabel: "true"},
			Tolerations:                   []corev1.Toleration{{Key: devcluster.RealNodeLabel, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
			TerminationGracePeriodSeconds: ptr.To(int64(2)),
			Containers: []corev1.Container{{Name: "main", Image: s.AgentImage,
				Command: []string{"/bin/sh", "-c", fmt.Sprintf("nc -w 10 %s %s -e /bin/true && echo reached; %s --version 2>&1", host, port, devcluster.SpireAgentPath)}}},
		},
	}
	if _, err := c.Clientset.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 2*time.Minute, "pod reach done on the real node", func() (bool, string) {
		p, err := c.Clientset.CoreV1().Pods(ns).Get(ctx, "reach", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		done := p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
		return done && p.Spec.NodeName == nodeName, fmt.Sprintf("node %q, phase %s, %v", p.Spec.NodeName, p.Status.Phase, p.Status.ContainerStatuses)
	})
	out, err := exec.Command(env.Kubectl(), "--kubeconfig", env.Kubeconfig, "-n", ns, "logs", "reach").CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl logs: %v: %s", err, out)
	}
	want := []string{"reached", strings.TrimPrefix(devcluster.SpireVersion, "v")}
	for _, w := range want {
		if !strings.Contains(string(out), w) {
			t.Errorf("the pod's log %q lacks %q", out, w)
		}
	}
}
