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

// realSidecarGroup is a service role on the real node with three sidecar secrets (a restart
// one, a template, a plain key) and a companion that lists /run/secrets into its state
// directory every second. {{ADDR}}, {{CA}} are the server's.
const realSidecarGroup = `group: {{GROUP}}
nodes:
  web:
    image: {rootfs: nodes/web/rootfs, command: [/bin/sleep, "1000000"]}
    init: none
    rolloutTimeout: 2m
    {{REAL}}
    secretsFrom:
      openbao: {address: "{{ADDR}}", {{CA}}role: {{GROUP}}-web, pollInterval: 1s}
    roles:
      sso:
        service: {image: {archive: build/sso.tar, command: [/usr/sbin/httpd, -f, -p, "8080", -h, /tmp]}}
        probes:
          startup: {tcp: 8080}
        sidecarSecrets:
          pw: {path: {{GROUP}}/db, key: password, restart: true}
          app.conf: {path: {{GROUP}}/db, template: "user={{ .user }}\n"}
          level: {path: {{GROUP}}/conf, key: level}
        companion: true
`

// TestRealSecretsSidecar: a service role's secrets on the dev environment's server, on the real
// node (FR-004e, FR-004g). plan names the role an operator must write; a secret the role may
// not read fails the rollout with the server's reason while the service has never started (the
// startup probe gates it); once the policy allows it the role deploys, the service reads its
// files read-only at /run/secrets and cannot read the node's token; the companion runs; a
// changed plain secret is rewritten without a restart and a changed restart secret restarts
// the service container only, within seconds; no value is in any output, state, plan file,
// render, event or log.
func TestRealSecretsSidecar(t *testing.T) {
	t.Parallel()
	srv := realSecretsServer(t)
	tmpl := strings.NewReplacer("{{ADDR}}", srv.Addr).Replace(realSidecarGroup)
	g, node := NewRealGroup(t, "real-secrets", tmpl, "web")
	tmpl = strings.ReplaceAll(tmpl, "{{CA}}", g.writeCA(srv))
	g.realWriteGroup(tmpl)
	g.WithEnv("SLIPWAY_OPENBAO_TOKEN=" + srv.Token)
	g.writeServiceArchive("sso.tar", `while true; do ls /run/secrets > /var/lib/companion/seen; sleep 1; done`)
	role := g.Name + "-web"
	values := map[string]string{"password": secretValue(t), "user": secretValue(t), "level": secretValue(t)}
	srv.put(t, g.Name+"/db", map[string]any{"password": values["password"], "user": values["user"]})
	srv.put(t, g.Name+"/conf", map[string]any{"level": values["level"]})
	run := g.MustRun // every run's output is scanned for the values at the end (scanForValues)

	// No role yet: plan fails naming the one an operator must write.
	r := g.Run("plan")
	if want := "bao write"; r.Code == 0 || !strings.Contains(r.Stderr, want) {
		t.Errorf("plan without the role does not fail saying what to write:\n%s", r)
	}
	if want := "bao write auth/kubernetes/role/" + role + " bound_service_account_names=node-web bound_service_account_namespaces=" + g.Name + " audience=openbao"; !strings.Contains(r.Stderr, want) {
		t.Errorf("plan without the role does not say what to write (%q):\n%s", want, r)
	}

	// The role may read conf, not db: the rollout fails with the server's reason, and the
	// service never started meanwhile.
	srv.policy(t, role, g.Name+"/conf")
	srv.role(t, role, "node-web", g.Name, "openbao", role)
	watch := g.watchServiceGate()
	r = g.Run("apply", "--yes")
	if r.Code == 0 || !strings.Contains(r.Stdout+r.Stderr, "permission denied") {
		t.Errorf("apply of a secret the role may not read does not give the server's reason:\n%s", r)
	}
	if early, seen := watch(); early != "" || seen == 0 {
		t.Errorf("startup gate: %q (statuses seen with the sidecar not started: %d)", early, seen)
	}

	// Allowed: the role deploys.
	srv.policy(t, role, g.Name+"/conf", g.Name+"/db")
	watch = g.watchServiceGate()
	start := time.Now()
	run(0, "apply", "--yes")
	t.Logf("apply with the sidecar: %s", time.Since(start).Round(time.Millisecond))
	if early, _ := watch(); early != "" {
		t.Errorf("startup gate: %s", early)
	}
	pod := g.realPod("web-sso", node)
	g.logPodStart(&pod)
	t.Logf("bench: the sidecar's resident memory: %d kB (VmRSS of /slipway-secrets run)", sidecarRSS(t, &pod))
	for file, want := range map[string]string{"pw": values["password"], "app.conf": "user=" + values["user"] + "\n", "level": values["level"]} {
		if got, ok := g.execIn(pod.Name, "service", "cat", "/run/secrets/"+file); !ok || got != want {
			t.Errorf("service: /run/secrets/%s is not the secret's value (%d bytes read, ok %v)", file, len(got), ok)
		}
	}
	if got, _ := g.execIn(pod.Name, "service", "stat", "-c", "%a %n", "/run/secrets/pw", "/run/secrets/level"); got != "444 /run/secrets/pw\n444 /run/secrets/level\n" {
		t.Errorf("modes of the files: %q, want 444", got)
	}
	// The token is the sidecar's alone: not mounted in the service, and not reachable through
	// the shared process namespace (the sidecar is another user).
	viaProc := `for p in /proc/[0-9]*; do if tr '\0' ' ' < $p/cmdline | grep -q '^/slipway-secrets run'; then cat $p/root/var/run/secrets/slipway.dev/node/token && exit 0; fi; done; exit 1`
	for _, c := range [][]string{
		{"touch", "/run/secrets/x"},
		{"ls", "/var/run/secrets/slipway.dev/node"},
		{"cat", "/var/run/secrets/kubernetes.io/serviceaccount/token"},
		{"sh", "-c", viaProc},
	} {
		if out, ok := g.execIn(pod.Name, "service", c...); ok {
			t.Errorf("service: %s succeeded (%d bytes out): it may only read /run/secrets", strings.Join(c, " "), len(out))
		}
	}
	devtest.WaitFor(t, 30*time.Second, "the companion to list /run/secrets", func() (bool, string) {
		got, _ := g.execIn(pod.Name, "companion", "cat", "/var/lib/companion/seen")
		return got == "app.conf\nlevel\npw\n", got
	})

	// A plain secret changes: its file is rewritten, nothing restarts.
	restarts := func() (svc, sidecar, comp int32) {
		p := g.realPod("web-sso", node)
		return containerStatus(&p, "service").RestartCount, containerStatus(&p, "secrets").RestartCount, containerStatus(&p, "companion").RestartCount
	}
	values["level2"] = secretValue(t)
	srv.put(t, g.Name+"/conf", map[string]any{"level": values["level2"]})
	devtest.WaitFor(t, 30*time.Second, "level rewritten", func() (bool, string) {
		got, _ := g.execIn(pod.Name, "service", "cat", "/run/secrets/level")
		return got == values["level2"], fmt.Sprintf("%d bytes", len(got))
	})
	if s, sc, c := restarts(); s != 0 || sc != 0 || c != 0 {
		t.Errorf("after a plain secret changed: restarts service %d, sidecar %d, companion %d; want none", s, sc, c)
	}

	// The restart secret changes: the service container restarts, alone, within seconds.
	values["password2"] = secretValue(t)
	changed := time.Now()
	srv.put(t, g.Name+"/db", map[string]any{"password": values["password2"], "user": values["user"]})
	devtest.WaitFor(t, time.Minute, "the service restarted", func() (bool, string) {
		s, _, _ := restarts()
		return s == 1, fmt.Sprintf("service restarts %d", s)
	})
	t.Logf("restart secret changed → service container restarted: %s", time.Since(changed).Round(100*time.Millisecond))
	if s, sc, c := restarts(); s != 1 || sc != 0 || c != 0 {
		t.Errorf("after the restart secret changed: restarts service %d, sidecar %d, companion %d; want 1, 0, 0", s, sc, c)
	}
	if p := g.realPod("web-sso", node); p.Name != pod.Name {
		t.Errorf("the pod was replaced (%s → %s): only its service container should restart", pod.Name, p.Name)
	}
	devtest.WaitFor(t, 30*time.Second, "the restarted service ready", func() (bool, string) {
		p := g.realPod("web-sso", node)
		cs := containerStatus(&p, "service")
		return cs.Ready, cs.State.String()
	})
	got, _ := g.execIn(pod.Name, "service", "cat", "/run/secrets/pw")
	if got != values["password2"] {
		t.Errorf("pw after the restart is not the new value (%d bytes)", len(got))
	}

	// No value anywhere slipway writes or prints, nor in the cluster's events, objects and logs.
	run(0, "plan", "-out", "saved.plan")
	run(0, "render", "--out", "rendered")
	if sidecarLog := g.kubectl("logs", pod.Name, "-c", "secrets"); !strings.Contains(sidecarLog, "a restart secret changed: stopped the service") {
		t.Errorf("sidecar log has no restart line:\n%s", sidecarLog)
	}
	values["server token"] = srv.Token
	g.scanForValues(values)
}

// watchServiceGate watches the group's pods of web-sso until the returned function is called;
// that returns the first status seen with the service container started before the secrets
// sidecar ("" when none), and how many statuses showed the sidecar not started yet.
func (g *Group) watchServiceGate() func() (string, int) {
	g.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w, err := g.Kube.Clientset.CoreV1().Pods(g.Name).Watch(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=web-sso"})
	if err != nil {
		g.t.Fatal(err)
	}
	early, seen := "", 0
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			side, svc := containerStatus(p, "secrets"), containerStatus(p, "service")
			started := side != nil && side.Started != nil && *side.Started
			if !started {
				seen++
			}
			if !started && svc != nil && (svc.State.Running != nil || svc.State.Terminated != nil || svc.RestartCount > 0) && side != nil && side.RestartCount == 0 && early == "" {
				early = fmt.Sprintf("pod %s: service %s while the sidecar had not started", p.Name, svc.State.String())
			}
		}
	}()
	return func() (string, int) {
		cancel()
		w.Stop()
		<-done
		return early, seen
	}
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

// sidecarRSS is the resident memory of pod's sidecar process on this machine (the real node's
// containers are processes here), in kB: VmRSS of the process `/slipway-secrets run` in the
// pod's cgroup.
func sidecarRSS(t *testing.T, pod *corev1.Pod) int {
	t.Helper()
	uid := string(pod.UID)
	for _, line := range processesWith("/slipway-secrets\x00run") {
		pid, _, _ := strings.Cut(line, ":")
		cg, _ := os.ReadFile(filepath.Join("/proc", pid, "cgroup"))
		if !strings.Contains(string(cg), uid) && !strings.Contains(string(cg), strings.ReplaceAll(uid, "-", "_")) {
			continue
		}
		st, err := os.ReadFile(filepath.Join("/proc", pid, "status"))
		if err != nil {
			continue
		}
		for _, l := range strings.Split(string(st), "\n") {
			if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmRSS:" {
				var kb int
				fmt.Sscan(f[1], &kb)
				return kb
			}
		}
	}
	t.Fatalf("no process /slipway-secrets run of pod %s on this machine", pod.Name)
	return 0
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
