package e2e

// Issue 43 (items 1, 2) on the real node against the dev environment's secrets server: a CA
// fetched over plain HTTP and its pin, and a template that fails on a value, which must not
// show it anywhere.

import (
	"crypto/sha256"
	"encoding/hex"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// edgesGroup is one service role whose template ranges over a key: {{PIN}} is the caSha256
// part of the server's line, {{CAURL}} where the CA is served over plain HTTP.
const edgesGroup = `group: {{GROUP}}
nodes:
  web:
    image: {rootfs: nodes/web/rootfs, command: [/bin/sleep, "1000000"]}
    init: none
    rolloutTimeout: 90s
    {{REAL}}
    secretsFrom:
      openbao: {address: "{{ADDR}}", caFetchUrl: "{{CAURL}}"{{PIN}}, role: {{GROUP}}-web, pollInterval: 1s}
    roles:
      sso:
        service: {image: {archive: build/sso.tar, command: [/usr/sbin/httpd, -f, -p, "8080", -h, /tmp]}}
        probes:
          startup: {tcp: 8080}
        sidecarSecrets:
          {{FILES}}
`

// serveCAPlain serves ca over plain HTTP on the host of the server's address (the address the
// pods reach this machine at) and returns its URL.
func serveCAPlain(t *testing.T, addr string, ca []byte) string {
	t.Helper()
	u, err := url.Parse(addr)
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", net.JoinHostPort(u.Hostname(), "0"))
	if err != nil {
		t.Fatalf("serve the CA beside the secrets server: %v", err)
	}
	s := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(ca) })}
	go s.Serve(l)
	t.Cleanup(func() { s.Close() })
	return "http://" + l.Addr().String() + "/ca"
}

// TestRealSecretsEdges: with the server's CA fetched over plain http://, plan notes the missing
// pin with the CA's digest and fails on a pin the CA does not match (the sidecars would refuse
// it); pinned, the role deploys and its sidecar fetched and trusted the CA. Then a template
// that ranges over a string (the issue's `{{ range .password }}`) fails the rollout with the
// file, the key and the cause, and no value appears in any output, file, event, object,
// termination message or log.
func TestRealSecretsEdges(t *testing.T) {
	t.Parallel()
	srv := realSecretsServer(t)
	if len(srv.CA) == 0 {
		t.Fatalf("the dev secrets server %s has no CA file: this test needs its TLS", srv.Addr)
	}
	caURL := serveCAPlain(t, srv.Addr, srv.CA)
	sum := sha256.Sum256(srv.CA)
	pin := hex.EncodeToString(sum[:])
	tmpl := strings.NewReplacer("{{ADDR}}", srv.Addr, "{{CAURL}}", caURL).Replace(edgesGroup)
	write := func(pinPart, files string) string {
		return strings.NewReplacer("{{PIN}}", pinPart, "{{FILES}}", files).Replace(tmpl)
	}
	good := `pw: {path: {{GROUP}}/db, key: password}`
	g, node := NewRealGroup(t, "real-sec-edges", write("", good), "web")
	g.WithEnv("SLIPWAY_OPENBAO_TOKEN=" + srv.Token)
	g.writeServiceArchive("sso.tar", "exit 0")
	role := g.Name + "-web"
	values := map[string]string{"password": secretValue(t), "user": secretValue(t), "server token": srv.Token}
	srv.put(t, g.Name+"/db", map[string]any{"password": values["password"], "user": values["user"]})
	srv.policy(t, role, g.Name+"/db")
	srv.role(t, role, "node-web", g.Name, "openbao", role)

	// No pin: a note with the digest of the CA plan fetched.
	r := g.MustRun(0, "plan")
	if want := "its CA comes over plain http:// from " + caURL + " with no caSha256 pin"; !strings.Contains(r.Stdout+r.Stderr, want) ||
		!strings.Contains(r.Stdout+r.Stderr, "caSha256 "+pin) {
		t.Errorf("plan of an unpinned http CA does not note it with the digest %s:\n%s", pin, r)
	}
	// A pin the CA does not match fails plan.
	wrong := strings.Repeat("0", 64)
	g.realWriteGroup(write(`, caSha256: "`+wrong+`"`, good))
	r = g.Run("plan")
	if r.Code == 0 || !strings.Contains(r.Stderr, "its SHA-256 is "+pin+", not the pinned caSha256 "+wrong+": refused") {
		t.Errorf("plan with a wrong pin:\n%s", r)
	}
	// The right pin: the role deploys; its sidecar fetched the CA over http and trusted it.
	g.realWriteGroup(write(`, caSha256: "sha256:`+strings.ToUpper(pin)+`"`, good))
	r = g.MustRun(0, "apply", "--yes")
	if strings.Contains(r.Stdout+r.Stderr, "no caSha256 pin") {
		t.Errorf("a pinned CA is still noted:\n%s", r)
	}
	pod := g.realPod("web-sso", node)
	if got, ok := g.execIn(pod.Name, "service", "cat", "/run/secrets/pw"); !ok || got != values["password"] {
		t.Errorf("service: /run/secrets/pw is not the secret (%d bytes, ok %v)", len(got), ok)
	}

	// A template that ranges over the password: the rollout fails saying where and why.
	g.realWriteGroup(write(`, caSha256: "`+pin+`"`, good+"\n          app.conf: {path: {{GROUP}}/db, template: \"{{ range .password }}x{{ end }}\"}"))
	r = g.Run("apply", "--yes")
	want := "file app.conf: template line 1 col 9 at <.password>: range can't iterate over this value"
	if r.Code == 0 {
		t.Errorf("apply of a template that cannot run succeeded:\n%s", r)
	}
	// The rollout's failure carries the sidecar's termination message (its last log lines).
	if !strings.Contains(r.Stdout+r.Stderr, want) {
		t.Errorf("apply does not say why the template failed (%q):\n%s", want, r)
	}
	for _, p := range g.roPods("web-sso") {
		if cs := containerStatus(&p, "secrets"); cs != nil && terminated(cs) != "" {
			t.Logf("pod %s: the sidecar's termination message: %s", p.Name, terminated(cs))
		}
	}
	g.scanForValues(values)
}

// terminated is the termination message of cs's current or last run, "" when it has none.
func terminated(cs *corev1.ContainerStatus) string {
	for _, st := range []corev1.ContainerState{cs.State, cs.LastTerminationState} {
		if st.Terminated != nil && st.Terminated.Message != "" {
			return st.Terminated.Message
		}
	}
	return ""
}
