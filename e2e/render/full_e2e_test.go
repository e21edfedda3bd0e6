package render_test

import (
	"context"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"slipway.dev/slipway/internal/devcluster"
	"slipway.dev/slipway/internal/devcluster/devtest"
	"slipway.dev/slipway/internal/kube"
)

// TestFullExampleOnCluster deploys examples/full the way its README says, as a kustomize
// package: push its base image (built in the example; the digest in the file is the one the
// reproducible build gives), create the objects it references and the Secrets render writes
// without values, `render --push --service-monitors --out`, then `kubectl apply -k`; every
// claim binds and every Deployment becomes ready, and the applied package leaves the Secrets'
// values in place.
func TestFullExampleOnCluster(t *testing.T) {
	const token, ssoSecret = "full-example-token", "full-example-client-secret"
	t.Setenv("APP_TOKEN", token)
	t.Setenv("SSO_CLIENT_SECRET", ssoSecret)
	env, c, ns, ctx, tmp, run, pushed := fullExample(t, "render-full")
	example, _ := filepath.Abs("../../examples/full/slipway.yaml")
	file, err := os.ReadFile(example)
	if err != nil {
		t.Fatal(err)
	}
	digest := regexp.MustCompile(`sha256:[0-9a-f]{64}`).FindString(pushed)
	if want := "${K8S_REGISTRY}/full-base/base@" + digest; digest == "" || !strings.Contains(string(file), want) {
		t.Fatalf("the pushed base image %q is not the one examples/full names (want %s in it)", strings.TrimSpace(pushed), want)
	}

	mustCreate(t, ctx, c, ns, map[string]map[string]string{
		"web-app": {"token": token, "key.pem": readFile(t, "../../examples/full/keys/app.pem")}, "web-sso-client": {"secret": ssoSecret},
	})
	dir := filepath.Join(tmp, "pkg")
	run("-f", example, "-n", ns, "--registry", env.Registry, "--state", "file://"+filepath.Join(tmp, "state.json"),
		"--kubeconfig", env.Kubeconfig, "render", "--push", "--service-monitors", "--out", dir)
	for _, f := range []string{"secret-web-app.yaml", "servicemonitor-web-worker-metrics.yaml", "poddisruptionbudget-web-worker.yaml", "configmap-web-worker-jobs.yaml"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("the package lacks %s: %v", f, err)
		}
	}
	kubectl := exec.CommandContext(ctx, filepath.Join(env.BinDir, "kubectl"), "--kubeconfig", env.Kubeconfig, "apply", "-k", dir)
	if out, err := kubectl.CombinedOutput(); err != nil {
		t.Fatalf("kubectl apply -k: %v\n%s", err, out)
	}
	waitReady(t, ctx, c, ns, 3, 5)

	s, err := c.Clientset.CoreV1().Secrets(ns).Get(ctx, "web-app", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if string(s.Data["token"]) != token || s.Labels["slipway.dev/node"] != "web" {
		t.Errorf("Secret web-app after kubectl apply -k: labels %v, its token kept: %t", s.Labels, string(s.Data["token"]) == token)
	}
	smon := schema.GroupVersionResource{Group: kube.ServiceMonitorKind.Group, Version: kube.ServiceMonitorKind.Version, Resource: "servicemonitors"}
	if _, err := c.Dynamic.Resource(smon).Namespace(ns).Get(ctx, "web-worker-metrics", metav1.GetOptions{}); err != nil {
		t.Errorf("ServiceMonitor web-worker-metrics: %v", err)
	}
}

// mustCreate makes what examples/full's README has the operator create first: the namespace,
// the objects the file references and slipway does not make, and made (for a package from
// render --out) the Secrets slipway makes, whose values a rendered package does not hold.
func mustCreate(t *testing.T, ctx context.Context, c *kube.Client, ns string, made map[string]map[string]string) {
	t.Helper()
	if _, err := c.Clientset.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	secrets := map[string]map[string]string{
		"db-credentials": {"password": "example-password"},
		"web-tls":        {"tls.crt": "example certificate", "tls.key": "example key"},
	}
	maps.Copy(secrets, made)
	for name, data := range secrets {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, StringData: data}
		if _, err := c.Clientset.CoreV1().Secrets(ns).Create(ctx, s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings", Namespace: ns}, Data: map[string]string{"level": "info"}}
	if _, err := c.Clientset.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// fullExample is what the tests of examples/full start from: the dev cluster with the
// ServiceMonitor CRD, a namespace named for prefix, a slipway binary in tmp and the example's
// base image pushed (its output: the pushed reference).
func fullExample(t *testing.T, prefix string) (env *devcluster.Env, c *kube.Client, ns string, ctx context.Context, tmp string, run func(args ...string) (string, string), pushed string) {
	env = devtest.Env(t)
	devtest.ServiceMonitorCRD(t, env)
	c, _ = client(t, env.Kubeconfig)
	ns = testNamespace(t, c, prefix)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	t.Cleanup(cancel)
	tmp = t.TempDir()
	run = slipwayRunner(t, ctx, tmp)
	base, _ := filepath.Abs("../../examples/full/base/slipway.yaml")
	pushed, _ = run("-f", base, "--registry", env.Registry, "images", "push")
	return env, c, ns, ctx, tmp, run, pushed
}

// TestFullExampleApply deploys examples/full with slipway itself: apply brings every
// Deployment to ready and makes the Secrets from the environment; plan then says No changes.
func TestFullExampleApply(t *testing.T) {
	t.Setenv("APP_TOKEN", "full-apply-token")
	t.Setenv("SSO_CLIENT_SECRET", "full-apply-client-secret")
	env, c, ns, ctx, tmp, run, _ := fullExample(t, "render-full-apply")
	mustCreate(t, ctx, c, ns, nil)
	example, _ := filepath.Abs("../../examples/full/slipway.yaml")
	slipway := func(args ...string) (string, string) {
		t.Helper()
		return run(append([]string{"-f", example, "-n", ns, "--registry", env.Registry, "--state", "file://" + filepath.Join(tmp, "state.json"),
			"--kubeconfig", env.Kubeconfig}, args...)...)
	}
	slipway("apply", "--yes")
	waitReady(t, ctx, c, ns, 3, 5)
	if out, _ := slipway("plan"); !strings.Contains(out, "No changes.") {
		t.Errorf("plan after apply: want No changes., got\n%s", out)
	}
	s, err := c.Clientset.CoreV1().Secrets(ns).Get(ctx, "web-sso-client", metav1.GetOptions{})
	if err != nil || string(s.Data["secret"]) != "full-apply-client-secret" {
		t.Errorf("Secret web-sso-client: %v, holds the environment's value: %t", err, err == nil && string(s.Data["secret"]) == "full-apply-client-secret")
	}
}
