package devcluster_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	authv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"slipway.dev/slipway/internal/devcluster"
	"slipway.dev/slipway/internal/devcluster/devtest"
	"slipway.dev/slipway/internal/kube"
)

// vaultAPI calls the dev secrets server's HTTP API with token (empty: none).
type vaultAPI struct {
	t      *testing.T
	addr   string
	client *http.Client
}

func newVaultAPI(t *testing.T, env *devcluster.Env) *vaultAPI {
	t.Helper()
	pem, err := os.ReadFile(env.OpenBaoCAFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		t.Fatalf("%s holds no certificate", env.OpenBaoCAFile)
	}
	return &vaultAPI{t: t, addr: env.OpenBaoAddr, client: &http.Client{Timeout: 10 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}}
}

// do sends body (nil: none) and returns the status and the decoded answer.
func (v *vaultAPI) do(method, path, token string, body any) (int, map[string]any) {
	v.t.Helper()
	var r io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, v.addr+"/v1/"+path, r)
	if err != nil {
		v.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("X-Vault-Token", token)
	}
	resp, err := v.client.Do(req)
	if err != nil {
		v.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

// must is do that fails the test on an answer other than 2xx (the server's errors say why;
// they hold no token).
func (v *vaultAPI) must(method, path, token string, body any) map[string]any {
	v.t.Helper()
	code, out := v.do(method, path, token, body)
	if code/100 != 2 {
		v.t.Fatalf("%s %s: %d %v", method, path, code, out["errors"])
	}
	return out
}

// TestSecretsServer checks the secrets server of dev up --secrets against the real API server:
// it answers over TLS with its CA, KV v2 is at secret/ and kubernetes auth at kubernetes/, a
// pod on the real node reaches it, that pod's projected token (audience openbao) logs in, and a
// wrong audience is refused.
func TestSecretsServer(t *testing.T) {
	env := devtest.Secrets(t)
	c, err := kube.New(env.Kubeconfig, "")
	if err != nil {
		t.Fatal(err)
	}
	nodeName := realNode(t, env)
	if want := "https://" + env.HostShare().Gateway + ":"; !strings.HasPrefix(env.OpenBaoAddr, want) {
		t.Errorf("OpenBaoAddr = %s, want %s<port>: the address the real node's pods reach", env.OpenBaoAddr, want)
	}
	st, err := os.Stat(env.OpenBaoTokenFile)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("root token file %s has mode %v, want 0600", env.OpenBaoTokenFile, st.Mode().Perm())
	}
	b, err := os.ReadFile(env.OpenBaoTokenFile)
	if err != nil {
		t.Fatal(err)
	}
	root := strings.TrimSpace(string(b))
	v := newVaultAPI(t, env)

	health := v.must("GET", "sys/health", "", nil)
	if health["initialized"] != true || health["sealed"] != false || health["version"] != strings.TrimPrefix(devcluster.VaultVersion, "v") {
		t.Errorf("sys/health = %v, want initialized, unsealed, version %s", health, devcluster.VaultVersion)
	}
	mounts := v.must("GET", "sys/mounts", root, nil)
	kv, _ := mounts["secret/"].(map[string]any)
	opts, _ := kv["options"].(map[string]any)
	if kv["type"] != "kv" || opts["version"] != "2" {
		t.Errorf("sys/mounts secret/ = %v, want kv version 2", kv)
	}
	auths := v.must("GET", "sys/auth", root, nil)
	if k, _ := auths["kubernetes/"].(map[string]any); k["type"] != "kubernetes" {
		t.Errorf("sys/auth kubernetes/ = %v, want type kubernetes", k)
	}

	ns := namespace(t, c, "secrets")
	secretPath := "secret/data/" + ns + "/db"
	v.must("POST", secretPath, root, map[string]any{"data": map[string]string{"password": "dev-only"}})
	v.must("PUT", "sys/policies/acl/"+ns, root, map[string]string{"policy": `path "secret/data/` + ns + `/*" { capabilities = ["read"] }`})
	v.must("POST", "auth/kubernetes/role/"+ns, root, map[string]any{
		"bound_service_account_names": "web", "bound_service_account_namespaces": ns,
		"audience": "openbao", "token_policies": ns, "token_ttl": "5m",
	})
	t.Cleanup(func() {
		v.do("DELETE", "auth/kubernetes/role/"+ns, root, nil)
		v.do("DELETE", "sys/policies/acl/"+ns, root, nil)
		v.do("DELETE", "secret/metadata/"+ns+"/db", root, nil)
	})
	ctx := context.Background()
	if _, err := c.Clientset.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "web"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// From the host: a wrong audience is refused by the server (the token itself is valid).
	tr, err := c.Clientset.CoreV1().ServiceAccounts(ns).CreateToken(ctx, "web",
		&authv1.TokenRequest{Spec: authv1.TokenRequestSpec{Audiences: []string{"other"}, ExpirationSeconds: ptr.To(int64(600))}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	code, out := v.do("POST", "auth/kubernetes/login", "", map[string]string{"role": ns, "jwt": tr.Status.Token})
	if code != http.StatusForbidden || !strings.Contains(fmt.Sprint(out["errors"]), "audience") {
		t.Errorf("login with audience other: %d %v, want 403 naming the audience", code, out["errors"])
	}

	// A pod on the real node reaches the server at OpenBaoAddr; its projected token (never
	// printed) logs in.
	loginFromPod(t, env, c, ns, nodeName)
}

// loginFromPod runs a busybox pod of ServiceAccount web on the real node with a projected
// token of audience openbao, checks the pod reaches the server, and logs in with its token.
func loginFromPod(t *testing.T, env *devcluster.Env, c *kube.Client, ns, nodeName string) {
	ctx := context.Background()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "login", Namespace: ns},
		Spec: corev1.PodSpec{
			ServiceAccountName:            "web",
			AutomountServiceAccountToken:  ptr.To(false),
			HostUsers:                     ptr.To(false),
			NodeSelector:                  map[string]string{devcluster.RealNodeLabel: "true"},
			Tolerations:                   []corev1.Toleration{{Key: devcluster.RealNodeLabel, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
			TerminationGracePeriodSeconds: ptr.To(int64(1)),
			Containers: []corev1.Container{{Name: "main", Image: busyboxImage(t, env.Registry),
				Command:      []string{"/bin/busybox", "sleep", "3600"},
				VolumeMounts: []corev1.VolumeMount{{Name: "token", MountPath: "/var/run/openbao", ReadOnly: true}}}},
			Volumes: []corev1.Volume{{Name: "token", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
				Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{
					Audience: "openbao", ExpirationSeconds: ptr.To(int64(600)), Path: "token"}}}}}}},
		},
	}
	if _, err := c.Clientset.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 2*time.Minute, "pod login Ready on the real node", func() (bool, string) {
		p, err := c.Clientset.CoreV1().Pods(ns).Get(ctx, "login", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return podReady(p) && p.Spec.NodeName == nodeName, fmt.Sprintf("node %q, phase %s, %v", p.Spec.NodeName, p.Status.Phase, p.Status.ContainerStatuses)
	})
	kubectl := func(args ...string) (string, error) {
		out, err := exec.Command(env.Kubectl(), append([]string{"--kubeconfig", env.Kubeconfig, "-n", ns, "exec", "login", "--"}, args...)...).CombinedOutput()
		return string(out), err
	}
	// Reached from the pod: plain HTTP to the TLS port gets Go's answer to a client that
	// speaks HTTP to a TLS server. (Busybox's wget cannot complete a TLS handshake with the
	// server's Go defaults, so the login itself goes from the host, with the pod's token.)
	plain := "http" + strings.TrimPrefix(env.OpenBaoAddr, "https") + "/v1/sys/health"
	if out, _ := kubectl("/bin/busybox", "wget", "-q", "-O", "-", plain); !strings.Contains(out, "400 Bad Request") {
		t.Errorf("from the pod on %s, %s answered %q, want the server's 400 to plain HTTP", nodeName, plain, out)
	}
	jwt, err := kubectl("/bin/busybox", "cat", "/var/run/openbao/token")
	if err != nil {
		t.Fatalf("the pod's projected token: %v", err) // the output may hold the token: not printed
	}
	code, out := newVaultAPI(t, env).do("POST", "auth/kubernetes/login", "", map[string]string{"role": ns, "jwt": jwt})
	auth, _ := out["auth"].(map[string]any)
	if code != http.StatusOK || fmt.Sprint(auth["policies"]) != fmt.Sprintf("[default %s]", ns) {
		t.Errorf("login with the projected token of a pod on %s: %d %v, policies %v; want 200 with [default %s]", nodeName, code, out["errors"], auth["policies"], ns)
	}
}
