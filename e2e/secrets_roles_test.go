package e2e

// Issue 43 items 3 and 6 on the real node with the dev environment's secrets server: a
// rotated `restart` secret restarts the service's container however its process was started,
// never the companion; a change of a role's sidecarSecrets alone rolls the role without
// stopping it, and a failure sets it back to the template it ran ready.

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"slipway.dev/slipway/internal/devcluster/devtest"
)

// scriptRestartGroup is a service role on the real node with no `command`: its image's
// entrypoint is /bin/serve, a `#!/bin/sh` script that runs busybox httpd as its child (so the
// container's first process is /bin/sh), and its companion is a script too (argv[0] /bin/sh).
const scriptRestartGroup = `group: {{GROUP}}
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
        service: {image: {archive: build/sso.tar}}
        probes:
          startup: {tcp: 8080}
        sidecarSecrets:
          pw: {path: {{GROUP}}/db, key: password, restart: true}
        companion: true
`

// serveScript is the service's entrypoint: a shell that does not exec its server.
const serveScript = "#!/bin/sh\necho serving >&2\nhttpd -f -p 8080 -h /tmp\n"

// TestRealSecretsRestartByContainer (issue 43 item 3): the service is started by a `#!/bin/sh`
// script (the image's entrypoint, no `command` in the file) and the companion by another: a
// rotated restart secret restarts the service's container, and only it, within seconds.
func TestRealSecretsRestartByContainer(t *testing.T) {
	t.Parallel()
	srv := realSecretsServer(t)
	tmpl := strings.NewReplacer("{{ADDR}}", srv.Addr).Replace(scriptRestartGroup)
	g, node := NewRealGroup(t, "real-restart", tmpl, "web")
	g.realWriteGroup(strings.ReplaceAll(tmpl, "{{CA}}", g.writeCA(srv)))
	g.WithEnv("SLIPWAY_OPENBAO_TOKEN=" + srv.Token)
	g.writeServiceArchiveWith("sso.tar", `while true; do sleep 1; done`, []string{"/bin/serve"}, map[string]string{"bin/serve": serveScript})
	role := g.Name + "-web"
	srv.policy(t, role, g.Name+"/db")
	srv.role(t, role, "node-web", g.Name, "openbao", role)
	first := secretValue(t)
	srv.put(t, g.Name+"/db", map[string]any{"password": first})
	g.MustRun(0, "apply", "--yes")
	pod := g.realPod("web-sso", node)

	// The premise: the service container's first process is the script's shell.
	ps, ok := g.execIn(pod.Name, "service", "sh", "-c", `for p in /proc/[0-9]*; do tr '\0' ' ' < $p/cmdline; echo; done`)
	if !ok || !strings.Contains(ps, "/bin/sh /bin/serve") || !strings.Contains(ps, "httpd -f -p 8080") {
		t.Fatalf("the service does not run as a script with httpd as its child:\n%s", ps)
	}
	restarts := func() (svc, sidecar, comp int32) {
		p := g.realPod("web-sso", node)
		return containerStatus(&p, "service").RestartCount, containerStatus(&p, "secrets").RestartCount, containerStatus(&p, "companion").RestartCount
	}
	if s, sc, c := restarts(); s != 0 || sc != 0 || c != 0 {
		t.Fatalf("before the rotation: restarts service %d, sidecar %d, companion %d; want none", s, sc, c)
	}

	changed := time.Now()
	second := secretValue(t)
	srv.put(t, g.Name+"/db", map[string]any{"password": second})
	devtest.WaitFor(t, time.Minute, "the service restarted", func() (bool, string) {
		s, sc, c := restarts()
		return s >= 1 || c >= 1, fmt.Sprintf("restarts service %d, sidecar %d, companion %d", s, sc, c)
	})
	t.Logf("restart secret changed → service container (a script) restarted: %s", time.Since(changed).Round(100*time.Millisecond))
	if s, sc, c := restarts(); s != 1 || sc != 0 || c != 0 {
		t.Errorf("after the restart secret changed: restarts service %d, sidecar %d, companion %d; want 1, 0, 0", s, sc, c)
	}
	if p := g.realPod("web-sso", node); p.Name != pod.Name {
		t.Errorf("the pod was replaced (%s → %s): only its service container should restart", pod.Name, p.Name)
	}
	// A minute: its startup probe's answer goes to this machine through the real node's
	// bridge, which can drop a pod's packets to it for half a minute when another pod goes.
	devtest.WaitFor(t, time.Minute, "the restarted service ready", func() (bool, string) {
		p := g.realPod("web-sso", node)
		cs := containerStatus(&p, "service")
		return cs.Ready, cs.State.String()
	})
	if got, _ := g.execIn(pod.Name, "service", "cat", "/run/secrets/pw"); got != second {
		t.Errorf("pw after the restart is not the new value (%d bytes)", len(got))
	}
	log := g.kubectl("logs", pod.Name, "-c", "secrets")
	if !strings.Contains(log, "a restart secret changed: stopped the service (container service, pids [") {
		t.Errorf("the sidecar's log has no restart of container service:\n%s", log)
	}
	for _, v := range []string{first, second, srv.Token} {
		if strings.Contains(log, v) {
			t.Error("a secret value or the server's token is in the sidecar's log")
		}
	}
}

// rollGroup is a service role on the real node without a companion (a rolling update keeps
// the running pod until a new one is ready) whose sidecar reads {{FILES}}.
const rollGroup = `group: {{GROUP}}
nodes:
  web:
    image: {rootfs: nodes/web/rootfs, command: [/bin/sleep, "1000000"]}
    init: none
    rolloutTimeout: 1m
    {{REAL}}
    secretsFrom:
      openbao: {address: "{{ADDR}}", {{CA}}role: {{GROUP}}-web, pollInterval: 1s}
    roles:
      sso:
        service: {image: {archive: build/sso.tar, command: [/usr/sbin/httpd, -f, -p, "8080", -h, /tmp]}}
        probes:
          startup: {tcp: 8080}
        sidecarSecrets:
{{FILES}}
`

// watchRoleUp follows Deployment web-sso and its pods until the returned function is called,
// which says whether the role was ever down meanwhile: its replicas set to 0, or no pod ready.
func (g *Group) watchRoleUp() func() string {
	g.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cs := g.Kube.Clientset
	pw, err := cs.CoreV1().Pods(g.Name).Watch(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=web-sso"})
	if err != nil {
		g.t.Fatal(err)
	}
	dw, err := cs.AppsV1().Deployments(g.Name).Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=web-sso"})
	if err != nil {
		g.t.Fatal(err)
	}
	var mu sync.Mutex
	down := ""
	ready := map[string]bool{}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		for ev := range pw.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			mu.Lock()
			ready[p.Name] = ev.Type != "DELETED" && p.DeletionTimestamp == nil && podReady(p)
			n := 0
			for _, r := range ready {
				if r {
					n++
				}
			}
			if n == 0 && down == "" {
				down = fmt.Sprintf("no pod of web-sso ready (pod %s %s)", p.Name, ev.Type)
			}
			mu.Unlock()
		}
	}()
	go func() {
		defer wg.Done()
		for ev := range dw.ResultChan() {
			if dep, ok := ev.Object.(*appsv1.Deployment); ok && dep.Spec.Replicas != nil && *dep.Spec.Replicas == 0 {
				mu.Lock()
				if down == "" {
					down = "Deployment web-sso scaled to 0"
				}
				mu.Unlock()
			}
		}
	}()
	return func() string {
		cancel()
		pw.Stop()
		dw.Stop()
		wg.Wait()
		return down
	}
}

// TestRealSecretsRoleRollsWithoutStop (issue 43 item 6): a change of a role's sidecarSecrets
// alone (no new image of the node or the service) rolls the role without stopping it; when the
// new template fails (a path the policy refuses: 403), the role is set back to the template it
// ran ready, and stays up the whole time; plan then still shows the change, and the next apply
// with the path allowed rolls it, again without a stop.
func TestRealSecretsRoleRollsWithoutStop(t *testing.T) {
	t.Parallel()
	srv := realSecretsServer(t)
	files := func(lines ...string) string {
		return strings.ReplaceAll(strings.NewReplacer("{{ADDR}}", srv.Addr).Replace(rollGroup), "{{FILES}}", strings.Join(lines, "\n"))
	}
	level := "          level: {path: {{GROUP}}/conf, key: level}"
	pw := "          pw: {path: {{GROUP}}/db, key: password}"
	g, node := NewRealGroup(t, "real-roll", files(level), "web")
	ca := g.writeCA(srv)
	write := func(tmpl string) { g.realWriteGroup(strings.ReplaceAll(tmpl, "{{CA}}", ca)) }
	write(files(level))
	g.WithEnv("SLIPWAY_OPENBAO_TOKEN=" + srv.Token)
	g.writeServiceArchive("sso.tar", "exit 0")
	role := g.Name + "-web"
	srv.policy(t, role, g.Name+"/conf")
	srv.role(t, role, "node-web", g.Name, "openbao", role)
	srv.put(t, g.Name+"/conf", map[string]any{"level": secretValue(t)})
	srv.put(t, g.Name+"/db", map[string]any{"password": secretValue(t)})
	g.MustRun(0, "apply", "--yes")
	before := g.realPod("web-sso", node)
	oldTemplate := g.roDeployment("web-sso").Spec.Template.Spec.InitContainers[0].Env[0].Value

	// A file the policy refuses: the new template fails with the server's reason, the role
	// is set back and was never down.
	write(files(level, pw))
	if r := g.Run("plan"); !strings.Contains(r.Stdout, "roll role sso without a stop") {
		t.Errorf("plan does not say the role rolls without a stop:\n%s", r)
	}
	watch := g.watchRoleUp()
	start := time.Now()
	r := g.Run("apply", "--yes")
	down := watch()
	t.Logf("failed roll of the role and its set-back: %s", time.Since(start).Round(100*time.Millisecond))
	if r.Code == 0 || !strings.Contains(r.Stdout+r.Stderr, "permission denied") ||
		!strings.Contains(r.Stderr, "it is back on its last ready template and stays up") {
		t.Errorf("apply of a refused secrets path does not fail with the server's reason and the set-back:\n%s", r)
	}
	if strings.Contains(r.Stdout+r.Stderr, "to 0 replicas") {
		t.Errorf("apply stopped the role:\n%s", r)
	}
	if down != "" {
		t.Errorf("the role was down during the failed roll: %s", down)
	}
	if got := g.roDeployment("web-sso").Spec.Template.Spec.InitContainers[0].Env[0].Value; got != oldTemplate {
		t.Errorf("web-sso's template is not the last ready one after the failure:\n%s\nwant\n%s", got, oldTemplate)
	}
	devtest.WaitFor(t, time.Minute, "web-sso back to its one ready pod", func() (bool, string) {
		pods := g.roPods("web-sso")
		return len(pods) == 1 && pods[0].Name == before.Name && podReady(&pods[0]), fmt.Sprintf("%d pods", len(pods))
	})
	if r := g.MustRun(2, "plan", "--detailed-exitcode"); !strings.Contains(r.Stdout, "web-sso") {
		t.Errorf("plan after the set-back does not show the role's change again:\n%s", r)
	}

	// Allowed: the next apply rolls it, again without a stop.
	srv.policy(t, role, g.Name+"/conf", g.Name+"/db")
	watch = g.watchRoleUp()
	g.MustRun(0, "apply", "--yes")
	if down := watch(); down != "" {
		t.Errorf("the role was down during its roll: %s", down)
	}
	after := g.realPod("web-sso", node)
	if after.Name == before.Name {
		t.Errorf("the role's pod was not replaced by the new template")
	}
	g.MustRun(0, "plan", "--detailed-exitcode")
}
