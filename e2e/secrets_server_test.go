package e2e

// Issue 36 against the dev environment's real secrets server (Vault 1.14.8, dev up --secrets):
// the sidecar logs in with the pod's projected token through the server's kubernetes auth and
// reads KV v2; the tests write the roles, policies and secrets an operator would.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bao "github.com/openbao/openbao/api/v2"
	authv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"slipway.dev/slipway/internal/devcluster/devtest"
)

// secretsServer is the dev environment's secrets server, with its root token (a test writes
// roles, policies and secrets as an operator would; the token is never printed).
type secretsServer struct {
	Addr, CAFile string
	CA           []byte
	Token        string
	c            *bao.Client
}

// realSecretsServer returns the dev environment's secrets server; it fails the test when the
// environment has none (never a skip).
func realSecretsServer(t *testing.T) *secretsServer {
	t.Helper()
	env := devtest.Env(t)
	vars := devEnvExports(t, env.Dir)
	s := &secretsServer{Addr: vars["SLIPWAY_DEV_OPENBAO_ADDR"], CAFile: vars["SLIPWAY_DEV_OPENBAO_CA_FILE"]}
	if s.Addr == "" {
		t.Fatalf("the dev environment in %s has no secrets server: `slipway dev env` exports no SLIPWAY_DEV_OPENBAO_ADDR (start it with `slipway dev up --secrets`)", env.Dir)
	}
	tok, err := os.ReadFile(vars["SLIPWAY_DEV_OPENBAO_TOKEN_FILE"])
	if err != nil {
		t.Fatalf("secrets server %s: its token file: %v", s.Addr, err)
	}
	s.Token = strings.TrimSpace(string(tok))
	cfg := bao.DefaultConfig()
	cfg.Address = s.Addr
	if s.CAFile != "" {
		if s.CA, err = os.ReadFile(s.CAFile); err != nil {
			t.Fatal(err)
		}
		if err := cfg.ConfigureTLS(&bao.TLSConfig{CACertBytes: s.CA}); err != nil {
			t.Fatal(err)
		}
	}
	if s.c, err = bao.NewClient(cfg); err != nil {
		t.Fatal(err)
	}
	s.c.SetToken(s.Token)
	return s
}

// put writes a KV v2 secret at secret/<path>.
func (s *secretsServer) put(t *testing.T, path string, data map[string]any) {
	t.Helper()
	if _, err := s.c.KVv2("secret").Put(context.Background(), path, data); err != nil {
		t.Fatalf("secret/%s: %v", path, err)
	}
}

// write writes path (a role, a policy) as an operator would.
func (s *secretsServer) write(t *testing.T, path string, data map[string]any) {
	t.Helper()
	if _, err := s.c.Logical().Write(path, data); err != nil {
		t.Fatalf("write %s: %v", path, err)
	}
}

// policy writes a policy that may read the KV v2 paths given.
func (s *secretsServer) policy(t *testing.T, name string, paths ...string) {
	t.Helper()
	var hcl strings.Builder
	for _, p := range paths {
		fmt.Fprintf(&hcl, "path %q { capabilities = [\"read\"] }\n", "secret/data/"+p)
	}
	if err := s.c.Sys().PutPolicy(name, hcl.String()); err != nil {
		t.Fatalf("policy %s: %v", name, err)
	}
}

// role writes the kubernetes auth role name binding ServiceAccount sa in ns for audience.
func (s *secretsServer) role(t *testing.T, name, sa, ns, audience string, policies ...string) {
	t.Helper()
	s.write(t, "auth/kubernetes/role/"+name, map[string]any{
		"bound_service_account_names": sa, "bound_service_account_namespaces": ns,
		"audience": audience, "token_policies": strings.Join(policies, ","), "token_ttl": "10m",
	})
}

// login tries the kubernetes auth login of role with jwt; nil when the server gave a token.
func (s *secretsServer) login(role, jwt string) error {
	c, err := s.c.Clone()
	if err != nil {
		return err
	}
	c.ClearToken()
	sec, err := c.Logical().Write("auth/kubernetes/login", map[string]any{"role": role, "jwt": jwt})
	if err != nil {
		return err
	}
	if sec == nil || sec.Auth == nil || sec.Auth.ClientToken == "" {
		return fmt.Errorf("login answered without a token")
	}
	return nil
}

// secretValue is a fresh random value: one that appears nowhere unless it leaked.
func secretValue(t *testing.T) string {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return "v" + hex.EncodeToString(b)
}

// mintToken is a token of ServiceAccount sa in ns for audience, bound to pod when it is set
// (as the kubelet's projected token is).
func (g *Group) mintToken(sa, audience string, pod *corev1.Pod) string {
	g.t.Helper()
	secs := int64(600)
	req := &authv1.TokenRequest{Spec: authv1.TokenRequestSpec{Audiences: []string{audience}, ExpirationSeconds: &secs}}
	if pod != nil {
		req.Spec.BoundObjectRef = &authv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID}
	}
	tr, err := g.Kube.Clientset.CoreV1().ServiceAccounts(g.Name).CreateToken(context.Background(), sa, req, metav1.CreateOptions{})
	if err != nil {
		g.t.Fatalf("token of %s/%s: %v", g.Name, sa, err)
	}
	return tr.Status.Token
}

// TestSecretsNegativeLogins: the server's kubernetes auth, configured as dev up --secrets does
// and with the role an operator writes for node web, lets in web's pod-bound token for the
// audience and refuses another node's ServiceAccount, a wrong audience and the token of a pod
// that was deleted (the TokenReview checks the pod still exists).
func TestSecretsNegativeLogins(t *testing.T) {
	t.Parallel()
	srv := realSecretsServer(t)
	g := NewGroup(t, "sec-login", sidecarGroup, "web")
	ctx := context.Background()
	cs := g.Kube.Clientset
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: g.Name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, sa := range []string{"node-web", "node-api"} {
		if _, err := cs.CoreV1().ServiceAccounts(g.Name).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	role := g.Name + "-web"
	srv.policy(t, role, g.Name+"/*")
	srv.role(t, role, "node-web", g.Name, "openbao", role)
	// A pod object to bind tokens to (never scheduled: the TokenReview only needs the object).
	mk := func(name string) *corev1.Pod {
		p, err := cs.CoreV1().Pods(g.Name).Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.PodSpec{ServiceAccountName: "node-web", NodeName: "no-such-node",
				Containers: []corev1.Container{{Name: "c", Image: "example.org/none"}}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	pod := mk("bound")
	good := g.mintToken("node-web", "openbao", pod)
	if err := srv.login(role, good); err != nil {
		t.Fatalf("web's pod-bound token for audience openbao was refused: %v", err)
	}
	for _, tc := range []struct{ name, jwt, want string }{
		{"another node's service account", g.mintToken("node-api", "openbao", nil), "service account name not authorized"},
		{"a wrong audience", g.mintToken("node-web", "other", pod), "audience"},
	} {
		err := srv.login(role, tc.jwt)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: login error %v, want one saying %q", tc.name, err, tc.want)
		}
	}
	if err := cs.CoreV1().Pods(g.Name).Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
	devtest.WaitFor(t, 30*time.Second, "the deleted pod's token to be refused", func() (bool, string) {
		err := srv.login(role, good)
		if err == nil {
			return false, "still let in"
		}
		return true, err.Error()
	})
}

// writeCA copies the server's CA into the group directory (caFile must lie there).
func (g *Group) writeCA(srv *secretsServer) string {
	g.t.Helper()
	if len(srv.CA) == 0 {
		return ""
	}
	g.WriteFile("ca/openbao.pem", string(srv.CA))
	return "caFile: ca/openbao.pem, "
}

// readTree is the text of the files under the group directory's paths.
func (g *Group) readTree(paths ...string) string {
	g.t.Helper()
	var b strings.Builder
	for _, p := range paths {
		_ = filepath.Walk(filepath.Join(g.Dir, p), func(f string, fi os.FileInfo, err error) error {
			if err == nil && fi.Mode().IsRegular() {
				data, _ := os.ReadFile(f)
				b.Write(data)
			}
			return nil
		})
	}
	return b.String()
}

// kubectl runs kubectl in the group's namespace and returns its output.
func (g *Group) kubectl(args ...string) string {
	g.t.Helper()
	out, err := exec.Command(g.Env.Kubectl(), append([]string{"--kubeconfig", g.Env.Kubeconfig, "-n", g.Name}, args...)...).CombinedOutput()
	if err != nil {
		g.t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// devEnvExports are the variables `slipway dev env` exports for the dev environment in dir:
// what an operator's shell gets (the secrets server's address, CA and token file among them).
func devEnvExports(t *testing.T, dir string) map[string]string {
	t.Helper()
	cmd := exec.Command(binary, "dev", "env")
	cmd.Env = append(os.Environ(), "SLIPWAY_DEV_DIR="+dir)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("slipway dev env: %v", err)
	}
	vars := map[string]string{}
	for _, line := range strings.Split(string(out), "\n") {
		rest, ok := strings.CutPrefix(line, "export ")
		if !ok {
			continue
		}
		for _, kv := range strings.Fields(rest) {
			if k, v, ok := strings.Cut(kv, "="); ok {
				vars[k] = v
			}
		}
	}
	return vars
}
